// Bounds on what callers may write through Better Auth. Its endpoints accept free-form user and
// organization fields (admin update-user passes `data` straight to the database), so without
// these a 500-character phone number, a number where a name belongs, or `balance` in an admin's
// `data` would be stored, and a value the database refuses would surface as a 500.
import { APIError, createAuthMiddleware } from 'better-auth/api'
import { z } from 'zod'

const LIMITS = { name: 200, email: 254, url: 2048, slug: 100, reason: 1000 } as const

/** A hundred years. */
const MAX_BAN_SECONDS = 100 * 365 * 24 * 3600

const name = z.string().trim().min(1).max(LIMITS.name)
const email = z.string().max(LIMITS.email)
const url = z.string().max(LIMITS.url)
// E.164: a plus, then up to 15 digits, the first not zero.
const phoneNumber = z.string().regex(/^\+[1-9]\d{6,14}$/, 'phoneNumber must be in E.164 form, e.g. +15551234567')
const role = z.union([z.string().max(64), z.array(z.string().max(64)).max(8)])
const slug = z
  .string()
  .min(1)
  .max(LIMITS.slug)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'slug may contain letters, digits, dot, dash and underscore')

/** The user fields an administrator may set through `data`; `balance` changes only through the ledger. */
const adminUserData = z.strictObject({
  name: name.optional(),
  email: email.optional(),
  image: url.nullable().optional(),
  emailVerified: z.boolean().optional(),
  phoneNumber: phoneNumber.nullable().optional(),
  phoneNumberVerified: z.boolean().optional(),
  role: role.optional(),
  // Better Auth refuses it itself with PASSWORD_CANNOT_BE_UPDATED_VIA_UPDATE_USER, which names set-user-password.
  password: z.unknown().optional(),
})

const userInput = {
  name: name.optional(),
  email: email.optional(),
  image: url.nullable().optional(),
  phoneNumber: phoneNumber.nullable().optional(),
}

const organizationInput = { name: name.optional(), slug: slug.optional(), logo: url.nullable().optional() }

// Only the fields named here are checked; each endpoint's own schema still checks the rest.
const rules: Record<string, z.ZodType> = {
  '/sign-up/email': z.looseObject(userInput),
  '/update-user': z.looseObject(userInput),
  '/change-email': z.looseObject({ newEmail: email }),
  '/admin/create-user': z.looseObject({
    name: name.optional(),
    email: email.optional(),
    role: role.optional(),
    data: adminUserData.optional(),
  }),
  '/admin/update-user': z.looseObject({ data: adminUserData }),
  // Seconds; a ban past the year 9999 is no date the database (or JavaScript) can store.
  '/admin/ban-user': z.looseObject({
    banReason: z.string().max(LIMITS.reason).optional(),
    banExpiresIn: z.number().int().positive().max(MAX_BAN_SECONDS).optional(),
  }),
  '/organization/create': z.looseObject(organizationInput),
  // An update of nothing would be an UPDATE with no columns, which the database refuses. Better
  // Auth drops keys it does not know, so `data` naming only unknown ones (`{data: {data: {…}}}`,
  // `{id: …}`) was such an update: they are refused by name instead.
  '/organization/update': z.looseObject({
    data: z
      .strictObject({ ...organizationInput, metadata: z.record(z.string(), z.unknown()).optional() })
      .refine((d) => Object.keys(d).length > 0, 'data: name at least one field to change')
      .optional(),
  }),
  '/organization/check-slug': z.looseObject({ slug }),
  '/organization/create-team': z.looseObject({ name: name.optional() }),
  '/organization/update-team': z.looseObject({ data: z.looseObject({ name: name.optional() }).optional() }),
}

// Query strings: what Better Auth hands to the database unchecked (a field name to sort by).
const queryRules: Record<string, z.ZodType> = {
  '/api-key/list': z.looseObject({ sortBy: z.enum(['name', 'createdAt', 'updatedAt', 'expiresAt', 'lastRequest']).optional() }),
}

function describe(issue: z.core.$ZodIssue): string {
  const path = issue.path.join('.')
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.join(', ')
    const hint = issue.keys.includes('balance') ? ' (credits change only through POST /api/admin/credits)' : ''
    return `${path ? `${path}: ` : ''}field${issue.keys.length > 1 ? 's' : ''} not allowed: ${keys}${hint}`
  }
  return path ? `${path}: ${issue.message}` : issue.message
}

/** Better Auth `hooks.before`: refuses out-of-bounds input with 400 `{message, code}` before the endpoint runs. */
export const inputRules = createAuthMiddleware(async (ctx) => {
  const queryRule = queryRules[ctx.path]
  const rule = queryRule ?? rules[ctx.path]
  const input = queryRule ? (ctx.query ?? {}) : ctx.body
  if (!rule || input === undefined || input === null) return
  const parsed = rule.safeParse(input)
  if (parsed.success) return
  const issue = parsed.error.issues[0]!
  const code = issue.code === 'unrecognized_keys' ? 'FIELD_NOT_ALLOWED' : 'VALIDATION_ERROR'
  throw new APIError('BAD_REQUEST', { message: describe(issue), code })
})
