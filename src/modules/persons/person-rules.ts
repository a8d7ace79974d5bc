import { Role } from '../../db/database.ts';

/** Emails are stored trimmed; uniqueness and sign-in compare them case-insensitively. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

const ROLE_BY_NAME: Readonly<Record<string, Role>> = {
  systemadmin: Role.SystemAdmin,
  scopeadmin: Role.ScopeAdmin,
  user: Role.User,
};

/** A bound role input (its number, or its name in any case; the schema admits nothing else). */
export function parseRole(input: number | string): Role {
  if (typeof input === 'number') return input as Role;
  return ROLE_BY_NAME[input.toLowerCase()] ?? Role.User;
}

export const ADMINISTRATOR_ROLES: readonly Role[] = [Role.SystemAdmin, Role.ScopeAdmin];
export const isAdministratorRole = (role: Role): boolean => ADMINISTRATOR_ROLES.includes(role);
