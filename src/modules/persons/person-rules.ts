/** Emails are stored trimmed; uniqueness and sign-in compare them case-insensitively. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();
