// Accepting an organization invitation: the signed-in user must be its recipient (same e-mail,
// case-insensitive) with a verified address; Better Auth's organization plugin then records the
// membership, so its hooks, limits and teams apply as they do for /api/auth/organization/*.
import type { Auth } from '../auth/auth.js'
import type { Caller } from '../auth/guard.js'
import type { Database } from '../db/client.js'
import { AppError } from '../errors.js'
import { findInvitationDetails, type InvitationDetails } from './repository.js'

export type InvitationState = 'pending' | 'expired' | 'accepted' | 'rejected' | 'canceled' | 'unknown'

export function stateOf(inv: InvitationDetails, now = new Date()): InvitationState {
  if (inv.status === 'pending') return inv.expiresAt <= now ? 'expired' : 'pending'
  return (['accepted', 'rejected', 'canceled'] as const).find((s) => s === inv.status) ?? 'unknown'
}

/** Loads an invitation that can still be accepted, or throws the 4xx that says why not. */
export async function pendingInvitation(db: Database, id: string): Promise<InvitationDetails> {
  const inv = await findInvitationDetails(db, id)
  if (!inv) throw new AppError(404, 'INVITATION_NOT_FOUND', 'No such invitation')
  const state = stateOf(inv)
  if (state === 'expired') throw new AppError(410, 'INVITATION_EXPIRED', 'This invitation has expired; ask for a new one')
  if (state !== 'pending') throw new AppError(409, 'INVITATION_NOT_PENDING', `This invitation was already ${state}`)
  return inv
}

export function checkRecipient(inv: InvitationDetails, who: Caller): void {
  if (inv.email.toLowerCase() !== who.user.email.toLowerCase()) {
    throw new AppError(403, 'NOT_INVITATION_RECIPIENT', 'This invitation was sent to another e-mail address')
  }
  if (!who.user.emailVerified) throw new AppError(403, 'EMAIL_NOT_VERIFIED', 'Verify your e-mail address before accepting the invitation')
}

export async function acceptInvitation(opts: { auth: Auth; db: Database; who: Caller; headers: Headers; invitationId: string }) {
  const inv = await pendingInvitation(opts.db, opts.invitationId)
  checkRecipient(inv, opts.who)
  try {
    const { headers, response } = await opts.auth.api.acceptInvitation({ body: { invitationId: inv.id }, headers: opts.headers, returnHeaders: true })
    if (!response?.member) throw new AppError(409, 'INVITATION_NOT_PENDING', 'The invitation could not be accepted')
    return { invitation: inv, member: response.member, setCookies: headers.getSetCookie() }
  } catch (err) {
    if (err instanceof AppError) throw err
    const e = err as { statusCode?: number; status?: string; body?: { message?: string; code?: string }; message?: string }
    const status = typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500 ? e.statusCode : undefined
    if (!status) throw err
    throw new AppError(status, e.body?.code ?? 'INVITATION_NOT_ACCEPTED', e.body?.message ?? e.message ?? 'The invitation could not be accepted')
  }
}
