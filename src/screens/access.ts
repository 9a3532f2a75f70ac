// Who may see or change a screen: the devices' and playlists' rules (its owner, and members of its
// organization: owners and admins manage, members read and show it); anyone else gets 404.
import type { Executor } from '../db/client.js'
import { canManageWithRole } from '../devices/access.js'
import { findMemberRole } from '../devices/repository.js'
import { appError } from '../errors.js'
import { findScreen, type ScreenRow } from './repository.js'

type Access = 'manage' | 'read'

async function accessTo(db: Executor, s: ScreenRow, userId: string): Promise<Access | null> {
  if (s.userId === userId) return 'manage'
  if (!s.organizationId) return null
  const role = await findMemberRole(db, s.organizationId, userId)
  if (role === null) return null
  return canManageWithRole(role) ? 'manage' : 'read'
}

/** 404 when the caller may not see the screen, 403 when they may only read it. */
export async function requireScreen(db: Executor, id: string, userId: string, need: Access): Promise<ScreenRow> {
  const s = await findScreen(db, id)
  const access = s ? await accessTo(db, s, userId) : null
  if (!s || !access) throw appError('SCREEN_NOT_FOUND')
  if (need === 'manage' && access !== 'manage')
    throw appError('FORBIDDEN', 'Only its owner or an organization admin may change this screen')
  return s
}
