import type { CommandRunner } from '../../audit/command-runner.ts';
import type { FastifyBaseLogger } from 'fastify';
import type { AccountEmailDependencies } from './account-email.links.ts';
import { passwordRecoveryCommand } from './account-email.commands.ts';
import type { PasswordRecoveryBody } from './account-email.schemas.ts';
import { BoundedWorkQueue } from './work-queue.ts';

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
  const command = passwordRecoveryCommand(dependencies);
  return new BoundedWorkQueue<PasswordRecoveryBody>({
    capacity,
    work: async (request) => {
      await dependencies.commands.run(command, request, null);
    },
    // The address is not logged: the log must not become a list of who asked.
    onError: (error) =>
      dependencies.log.error(
        { reason: error instanceof Error ? error.name : 'unknown' },
        'password-recovery request failed',
      ),
  });
}
