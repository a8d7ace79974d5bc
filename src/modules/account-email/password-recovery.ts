import type { FastifyBaseLogger } from 'fastify';
import type { CommandRunner } from '../../audit/command-runner.ts';
import type { AccountEmailDependencies } from './account-email.links.ts';
import { passwordRecoveryCommand } from './account-email.commands.ts';
import type { PasswordRecoveryBody } from './account-email.schemas.ts';
import { type BoundedWorkQueue, createCommandQueue } from './work-queue.ts';

/** Spec §Limits: 1,024 queued password-recovery requests; beyond that one is dropped and logged. */
export const PASSWORD_RECOVERY_QUEUE_CAPACITY = 1024;

/**
 * Password recovery answers at once with the same message for every address; the lookup, the
 * token and the mail happen here, after the response, so neither the answer nor its timing
 * reveals whether the address belongs to anyone.
 */
export function createPasswordRecoveryQueue(
  dependencies: AccountEmailDependencies & {
    readonly commands: CommandRunner;
    readonly log: FastifyBaseLogger;
  },
  capacity = PASSWORD_RECOVERY_QUEUE_CAPACITY,
): BoundedWorkQueue<PasswordRecoveryBody> {
  return createCommandQueue(passwordRecoveryCommand(dependencies), {
    ...dependencies,
    capacity,
    failureMessage: 'password-recovery request failed',
  });
}
