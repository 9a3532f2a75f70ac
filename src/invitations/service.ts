// Accepting an organization invitation: the signed-in user must be its recipient (same e-mail,
// case-insensitive) with a verified address; Better Auth's organization plugin then records the
// membership, so its hooks, limits and teams apply as they do for /api/auth/organization/*.
import type { Auth } from '../auth/auth.js'
import type { Caller } from '../auth/guard.js'
import type { Database } from '../db/client.js'
import { AppError, appError } from '../errors.js'
import { findInvitationDetails, type InvitationDetails } from './repository.js'

export type InvitationState = 'pending' | 'expired' | 'accepted' | 'rejected' | 'canceled' | 'unknown'

export function stateOf(inv: InvitationDetails, now = new Date()): InvitationState {
  if (inv.status === 'pending') return inv.expiresAt <= now ? 'expired' : 'pending'
  return (['accepted', 'rejected', 'canceled'] as const).find((s) => s === inv.status) ?? 'unknown'
}

/** Loads an invitation that can still be accepted, or throws the 4xx that says why not. */
async function pendingInvitation(db: Database, id: string): Promise<InvitationDetails> {
  const inv = await findInvitationDetails(db, id)
  if (!inv) throw appError('INVITATION_NOT_FOUND')
  const state = stateOf(inv)
  if (state === 'expired') throw appError('INVITATION_EXPIRED')
  if (state !== 'pending') throw appError('INVITATION_NOT_PENDING', `This invitation was already ${state}`)
  return inv
}

function checkRecipient(inv: InvitationDetails, who: Caller): void {
  if (inv.email.toLowerCase() !== who.user.email.toLowerCase()) {
    throw appError('NOT_INVITATION_RECIPIENT')
  }
  if (!who.user.emailVerified) throw appError('EMAIL_NOT_VERIFIED')
}

export async function acceptInvitation(opts: { auth: Auth; db: Database; who: Caller; headers: Headers; invitationId: string }) {
  const inv = await pendingInvitation(opts.db, opts.invitationId)
  checkRecipient(inv, opts.who)
  try {
    const { headers, response } = await opts.auth.api.acceptInvitation({
      body: { invitationId: inv.id },
      headers: opts.headers,
      returnHeaders: true,
    })
    if (!response?.member) throw appError('INVITATION_NOT_PENDING')
    return { invitation: inv, member: response.member, setCookies: headers.getSetCookie() }
  } catch (err) {
    if (err instanceof AppError) throw err
    const e = err as { statusCode?: number; status?: string; body?: { message?: string; code?: string }; message?: string }
    const status = typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500 ? e.statusCode : undefined
    if (!status) throw err
    // Better Auth's own status and code pass through: they are not in the catalogue.
    throw new AppError(
      status,
      e.body?.code ?? 'INVITATION_NOT_ACCEPTED',
      e.body?.message ?? e.message ?? 'The invitation could not be accepted',
    )
  }
}
