// Pieces every route module's schemas share.
import { appError } from '../errors.js'
import { decodeCursor, type Cursor } from '../db/paging.js'

const errorRef = { $ref: 'Error#' } as const

/** `{ 400: Error, 401: Error, … }` for a response schema. */
export const errorResponses = (...codes: number[]) => Object.fromEntries(codes.map((c) => [c, errorRef]))

/** A Better Auth session (bearer token or session cookie), a Better Auth JWT or an API key: what requirePrincipal accepts. */
export const callerSecurity: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { cookieAuth: [] }, { jwtAuth: [] }, { apiKeyAuth: [] }]

/** The cursor a client sent back, or undefined for the first page; 400 for one we did not issue. */
export function cursorFrom(raw: string | undefined): Cursor | undefined {
  if (!raw) return undefined
  const cursor = decodeCursor(raw)
  if (!cursor) throw appError('INVALID_CURSOR')
  return cursor
}
