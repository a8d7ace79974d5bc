import { type Static, Type } from 'typebox';
import { DataOutput, PaginatedOutput } from '../../http/envelope.ts';
import { PageQuery } from '../../http/pagination.ts';
import { Email, Name, Password } from '../persons/persons.schemas.ts';

const Guid = Type.String({ format: 'uuid' });

/** DECISIONS §6: POST /api/auth/register. */
export const RegisterBody = Type.Object({
  name: Name,
  email: Email,
  password: Password,
  scopeId: Type.String({
    format: 'uuid',
    // A value that is not a GUID is a wrong-typed value: malformed (spec §Errors).
    errorMessage: 'The request is malformed.',
    description: 'The scope to register in; it must have self-registration open.',
  }),
});
export type RegisterBody = Static<typeof RegisterBody>;

/** DECISIONS §5: never the password hash, its salt or the token (spec §Resources). */
export const PendingRegistration = Type.Object({
  id: Guid,
  name: Type.String(),
  email: Type.String(),
  expiresAt: Type.String({ format: 'date-time' }),
  guessesLeft: Type.Integer({ description: 'Wrong passwords still allowed before it is discarded.' }),
  createdAt: Type.String({ format: 'date-time' }),
});
export type PendingRegistration = Static<typeof PendingRegistration>;

export const PendingRegistrationsParams = Type.Object({ id: Guid });
export type PendingRegistrationsParams = Static<typeof PendingRegistrationsParams>;
export const PendingRegistrationParams = Type.Object({ id: Guid, registrationId: Guid });
export type PendingRegistrationParams = Static<typeof PendingRegistrationParams>;

export const ListPendingRegistrationsQuery = Type.Object({ ...PageQuery });
export type ListPendingRegistrationsQuery = Static<typeof ListPendingRegistrationsQuery>;

export const DiscardAnswer = Type.Object({ id: Guid });
export type DiscardAnswer = Static<typeof DiscardAnswer>;

export const RegisterOutput = DataOutput(Type.Null());
export const PendingRegistrationPageOutput = PaginatedOutput(PendingRegistration);
export const DiscardOutput = DataOutput(DiscardAnswer);
