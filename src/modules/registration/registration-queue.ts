import type { FastifyBaseLogger } from 'fastify';
import type { CommandRunner } from '../../audit/command-runner.ts';
import { type BoundedWorkQueue, createCommandQueue } from '../account-email/work-queue.ts';
import {
  type AcceptedRegistration,
  type RegistrationDependencies,
  registerCommand,
} from './registration.commands.ts';

/** Registrations waiting for the background worker; beyond this one is dropped and logged. */
export const REGISTRATION_QUEUE_CAPACITY = 1024;

/**
 * Register answers at once with the same 202 for every address; the lookup, the pending
 * registration and the mail happen here, after the response, so neither the answer nor its
 * timing reveals whether the address is taken (spec §Endpoints /register).
 */
export function createRegistrationQueue(
  dependencies: RegistrationDependencies & {
    readonly commands: CommandRunner;
    readonly log: FastifyBaseLogger;
  },
  capacity = REGISTRATION_QUEUE_CAPACITY,
): BoundedWorkQueue<AcceptedRegistration> {
  return createCommandQueue(registerCommand(dependencies), {
    ...dependencies,
    capacity,
    failureMessage: 'registration request failed',
  });
}
