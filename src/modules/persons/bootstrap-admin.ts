import { randomBytes } from 'node:crypto';
import { defineCommand } from '../../audit/command-runner.ts';
import { Role } from '../../db/database.ts';
import { ConfigError } from '../../config/config.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { Services } from '../../services.ts';
import { normalizeEmail } from './person-rules.ts';
import { hasLiveSystemAdmin, insertPerson, newPersonRow } from './persons.repository.ts';

interface BootstrapInput {
  readonly name: string;
  readonly email: string;
  readonly passwordHash: string;
}

const createBootstrapAdmin = defineCommand({
  name: 'CreateBootstrapAdminCommand',
  async execute(context, input: BootstrapInput): Promise<{ id: string; created: boolean }> {
    // Checked again inside the transaction: two instances starting together create one admin.
    if (await hasLiveSystemAdmin(context.tx)) return { id: '', created: false };
    const row = newPersonRow({
      name: input.name,
      email: input.email.trim(),
      emailNormalized: normalizeEmail(input.email),
      role: Role.SystemAdmin,
      scopeId: null,
      passwordHash: input.passwordHash,
      emailVerified: true,
      now: context.now,
    });
    context.setTarget(row.id);
    await insertPerson(context.tx, row);
    return { id: row.id, created: true };
  },
});

/**
 * DECISIONS §8: when no live System Admin exists, create one from SERVICE_BOOTSTRAP_ADMIN_*.
 * In development without a configured password, a random one is generated and printed once.
 */
export async function ensureBootstrapAdmin(services: Services): Promise<void> {
  const admin = services.config.bootstrapAdmin;
  if (admin === null || (await hasLiveSystemAdmin(services.db))) return;
  const password = admin.password ?? randomBytes(18).toString('base64url');
  const passwordHash = await services.passwords.hash(password);
  let result: { created: boolean };
  try {
    result = await services.commands.run(
      createBootstrapAdmin,
      { name: admin.name, email: admin.email, passwordHash },
      null,
    );
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    // Another instance starting at the same moment created the admin first: nothing to do.
    if (await hasLiveSystemAdmin(services.db)) return;
    // Otherwise administrators' addresses are unique and a live Scope Admin holds this one.
    throw new ConfigError(
      'SERVICE_BOOTSTRAP_ADMIN_EMAIL belongs to an existing administrator; choose another address or promote that administrator.',
    );
  }
  if (!result.created) return;
  services.log.info({ email: admin.email }, 'created the bootstrap System Admin');
  if (admin.password === null) {
    // Printed to the terminal, not the log stream: it is shown once and never stored anywhere.
    process.stdout.write(
      `\nBootstrap System Admin created: ${admin.email}\nGenerated password (shown once): ${password}\n\n`,
    );
  }
}
