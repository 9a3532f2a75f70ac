// The interface's Session and User records: snake_case, every field present, null where empty,
// balance as numeric text. Better Auth's own get-session (camelCase) stays at /api/auth.
import type { UserRow } from './users-repository.js'

const timestamp = { type: 'string', format: 'date-time' } as const
const nullable = <T extends object>(s: T) => ({ anyOf: [s, { type: 'null' }] })
const nullableString = nullable({ type: 'string' })

export const sessionRecordSchema = {
  $id: 'Session',
  type: 'object',
  additionalProperties: false,
  required: [
    'id',
    'expires_at',
    'token',
    'created_at',
    'updated_at',
    'ip_address',
    'user_agent',
    'user_id',
    'impersonated_by',
    'active_organization_id',
  ],
  properties: {
    id: { type: 'string' },
    expires_at: timestamp,
    token: { type: 'string' },
    created_at: timestamp,
    updated_at: timestamp,
    ip_address: nullableString,
    user_agent: nullableString,
    user_id: { type: 'string' },
    impersonated_by: nullableString,
    active_organization_id: nullableString,
  },
} as const

export const userRecordSchema = {
  $id: 'User',
  type: 'object',
  additionalProperties: false,
  required: [
    'id',
    'name',
    'email',
    'email_verified',
    'image',
    'created_at',
    'updated_at',
    'phone_number',
    'phone_number_verified',
    'role',
    'banned',
    'ban_reason',
    'ban_expires',
    'balance',
  ],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    email: { type: 'string' },
    email_verified: { type: 'boolean' },
    image: nullableString,
    created_at: timestamp,
    updated_at: timestamp,
    phone_number: nullableString,
    phone_number_verified: { type: 'boolean' },
    role: { type: 'string' },
    banned: { type: 'boolean' },
    ban_reason: nullableString,
    ban_expires: nullable(timestamp),
    balance: { type: 'string', pattern: '^-?\\d+(\\.\\d+)?$', description: 'numeric text' },
  },
} as const

type AnySession = {
  id: string
  token: string
  userId: string
  expiresAt: Date | string
  createdAt: Date | string
  updatedAt: Date | string
  ipAddress?: string | null
  userAgent?: string | null
  impersonatedBy?: string | null
  activeOrganizationId?: string | null
}

const iso = (d: Date | string | null | undefined) => (d == null ? null : new Date(d).toISOString())

export function toSessionRecord(s: AnySession) {
  return {
    id: s.id,
    expires_at: iso(s.expiresAt),
    token: s.token,
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
    ip_address: s.ipAddress ?? null,
    user_agent: s.userAgent ?? null,
    user_id: s.userId,
    impersonated_by: s.impersonatedBy ?? null,
    active_organization_id: s.activeOrganizationId ?? null,
  }
}

export function toUserRecord(u: UserRow) {
  return {
    id: u.id,
    name: u.name,
    email: u.email,
    email_verified: u.emailVerified,
    image: u.image ?? null,
    created_at: iso(u.createdAt),
    updated_at: iso(u.updatedAt),
    phone_number: u.phoneNumber ?? null,
    phone_number_verified: u.phoneNumberVerified,
    role: u.role,
    banned: u.banned,
    ban_reason: u.banReason ?? null,
    ban_expires: iso(u.banExpires),
    balance: u.balance,
  }
}
