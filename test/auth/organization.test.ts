// Organizations through the official Better Auth client's organization plugin: the owner's
// flows, invitations by e-mail (accept, reject, cancel), members and roles, teams, and what a
// plain member may not do. The subtests share one app and build on each other in order.
import t from 'tap'
import { startApp, type TestApp } from '../helpers/app.js'
import { makeClient, signUp, uniqueEmail, type Client } from '../helpers/client.js'
import { waitForMail } from '../helpers/outbox.js'
import { appFetch } from '../helpers/app-fetch.js'

type ClientError = { message?: string; code?: string; status: number } | null
type Tap = Pick<typeof t, 'equal' | 'type' | 'ok' | 'match'>
type Person = { client: Client; id: string; token: string; email: string }

let svc: TestApp
let owner: Person
let ivan: Person // accepts an invitation
let org: { id: string; slug: string }
let side: { id: string; slug: string }
let ivanMemberId: string
let teamId: string

const suffix = Math.random().toString(36).slice(2, 8)

t.before(async () => {
  svc = await startApp(t)
  owner = await person('owner', 'Olive Owner')
})

function ok<T>(t: Tap, res: { data: T | null; error: ClientError }, what: string): T {
  t.equal(res.error, null, `${what} succeeds`)
  if (res.error || res.data == null) throw new Error(`${what} failed: ${JSON.stringify(res.error)}`)
  return res.data
}

function refused(t: Tap, res: { error: ClientError }, status: number, code: string | RegExp, what: string) {
  t.equal(res.error?.status, status, `${what}: status ${status}`)
  t.type(res.error?.message, 'string', `${what}: has a message`)
  t.match(res.error?.code, code, `${what}: code`)
}

async function person(prefix: string, name: string): Promise<Person> {
  const email = uniqueEmail(prefix)
  const { client } = makeClient(svc.url)
  const { token, userId } = await signUp(client, email, 'correct-horse-battery', name)
  return { client, id: userId, token, email }
}

/** Opens the verification link of the person's newest verification mail. */
async function verify(p: Person) {
  const mail = await waitForMail(svc.dataDir, p.email, 'verify-email')
  await appFetch(mail.link!, { redirect: 'manual' })
}

async function rootSession(token: string) {
  const res = await appFetch(`${svc.url}/get-session`, { headers: { authorization: `Bearer ${token}` } })
  return { status: res.status, body: (await res.json()) as { session: { active_organization_id: string | null; user_id: string } } }
}

/** The invitation id from the newest invitation mail to an address (the link's last path segment). */
async function invitationFromMail(t: Tap, email: string) {
  const mail = await waitForMail(svc.dataDir, email, 'invitation')
  t.ok(mail.link, 'invitation mail has a link')
  const url = new URL(mail.link!)
  t.equal(url.origin, svc.url, 'the link points at the service')
  t.match(url.pathname, /^\/invitations\/[^/]+$/, "link is the console's BASE/invitations/<id>")
  t.ok(mail.text.includes(mail.link!), 'the text carries the link')
  return { id: url.pathname.split('/').pop()!, mail }
}

t.test('create, check-slug, update, list', async (t) => {
  const slug = `acme-${suffix}`
  const created = ok(t, await owner.client.organization.create({ name: 'Acme Displays', slug }), 'create')
  t.equal(created.name, 'Acme Displays')
  t.equal(created.slug, slug)
  t.equal(created.members.length, 1)
  t.equal(created.members[0]!.userId, owner.id)
  t.equal(created.members[0]!.role, 'owner', 'the creator is the owner')
  org = { id: created.id, slug }

  refused(t, await owner.client.organization.checkSlug({ slug }), 400, 'ORGANIZATION_SLUG_ALREADY_TAKEN', 'check-slug of a taken slug')
  t.same(ok(t, await owner.client.organization.checkSlug({ slug: `free-${suffix}` }), 'check-slug of a free slug'), { status: true })
  refused(
    t,
    await owner.client.organization.create({ name: 'Copycat', slug }),
    400,
    'ORGANIZATION_ALREADY_EXISTS',
    'create with a taken slug',
  )

  const newSlug = `acme-screens-${suffix}`
  const updated = ok(
    t,
    await owner.client.organization.update({ organizationId: org.id, data: { name: 'Acme Screens', slug: newSlug } }),
    'update',
  )
  t.equal(updated.name, 'Acme Screens')
  t.equal(updated.slug, newSlug)
  org.slug = newSlug
  refused(t, await owner.client.organization.checkSlug({ slug: newSlug }), 400, 'ORGANIZATION_SLUG_ALREADY_TAKEN', 'the new slug is taken')
  t.same(ok(t, await owner.client.organization.checkSlug({ slug }), 'the old slug is free again'), { status: true })

  const second = ok(t, await owner.client.organization.create({ name: 'Side Project', slug: `side-${suffix}` }), 'create a second')
  side = { id: second.id, slug: second.slug }

  const list = ok(t, await owner.client.organization.list(), 'list')
  t.same(list.map((o) => o.id).sort(), [org.id, side.id].sort(), 'both organizations are listed')
  t.equal(list.find((o) => o.id === org.id)?.name, 'Acme Screens')

  const stranger = await person('stranger', 'Stranger')
  t.same(ok(t, await stranger.client.organization.list(), 'stranger lists'), [], 'a stranger sees none of them')
})

t.test('set-active shows in root /get-session; get-full-organization', async (t) => {
  // Creating an organization makes it the active one.
  t.equal((await rootSession(owner.token)).body.session.active_organization_id, side.id, 'the newest organization is active')

  const active = ok(t, await owner.client.organization.setActive({ organizationId: org.id }), 'set-active')
  t.equal(active.id, org.id)
  t.equal((await rootSession(owner.token)).body.session.active_organization_id, org.id, 'root /get-session shows the active organization')

  await owner.client.organization.setActive({ organizationId: null })
  t.equal((await rootSession(owner.token)).body.session.active_organization_id, null, 'unset')
  ok(t, await owner.client.organization.setActive({ organizationSlug: org.slug }), 'set-active by slug')
  t.equal((await rootSession(owner.token)).body.session.active_organization_id, org.id)

  const full = ok(t, await owner.client.organization.getFullOrganization(), 'get-full-organization of the active one')
  t.equal(full.id, org.id)
  t.equal(full.name, 'Acme Screens')
  t.same(
    full.members.map((m) => [m.userId, m.role, m.user.email]),
    [[owner.id, 'owner', owner.email]],
  )
  t.same(full.invitations, [])
  t.ok(Array.isArray((full as { teams?: unknown[] }).teams), 'teams are included')
  const bySlug = ok(
    t,
    await owner.client.organization.getFullOrganization({ query: { organizationSlug: side.slug } }),
    'get-full-organization by slug',
  )
  t.equal(bySlug.id, side.id)

  const outsider = await person('outsider', 'Outsider')
  refused(
    t,
    await outsider.client.organization.setActive({ organizationId: org.id }),
    403,
    'USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION',
    'outsider set-active',
  )
  t.equal((await rootSession(outsider.token)).body.session.active_organization_id, null)
  refused(
    t,
    await outsider.client.organization.getFullOrganization({ query: { organizationId: org.id } }),
    403,
    'USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION',
    'outsider get-full-organization',
  )
})

t.test('invitations: invite by mail, accept, reject, cancel', async (t) => {
  ivan = await person('ivan', 'Ivan Invitee')
  const invited = ok(
    t,
    await owner.client.organization.inviteMember({ email: ivan.email, role: 'member', organizationId: org.id }),
    'invite-member',
  )
  t.equal(invited.email, ivan.email)
  t.equal(invited.status, 'pending')
  t.equal(invited.role, 'member')
  refused(
    t,
    await owner.client.organization.inviteMember({ email: ivan.email, role: 'member', organizationId: org.id }),
    400,
    'USER_IS_ALREADY_INVITED_TO_THIS_ORGANIZATION',
    'inviting twice',
  )

  const { id: invitationId, mail } = await invitationFromMail(t, ivan.email)
  t.equal(invitationId, invited.id, 'the mail carries the invitation id')
  t.match(mail.subject, /Acme Screens/)

  // The recipient's address must be verified before they can list their invitations.
  refused(
    t,
    await ivan.client.organization.listUserInvitations(),
    403,
    'EMAIL_VERIFICATION_REQUIRED_FOR_INVITATION',
    'list-user-invitations unverified',
  )
  // Nor accept or reject it: the same rule as our /api/invitations/accept (EMAIL_NOT_VERIFIED).
  refused(
    t,
    await ivan.client.organization.acceptInvitation({ invitationId }),
    403,
    'EMAIL_VERIFICATION_REQUIRED_BEFORE_ACCEPTING_OR_REJECTING_INVITATION',
    'accept-invitation unverified',
  )
  refused(
    t,
    await ivan.client.organization.rejectInvitation({ invitationId }),
    403,
    'EMAIL_VERIFICATION_REQUIRED_BEFORE_ACCEPTING_OR_REJECTING_INVITATION',
    'reject-invitation unverified',
  )
  await verify(ivan)
  const mine = ok(t, await ivan.client.organization.listUserInvitations(), 'list-user-invitations')
  t.same(
    mine.map((i) => i.id),
    [invitationId],
  )
  t.equal((mine[0] as { organizationName?: string }).organizationName, 'Acme Screens')

  const got = ok(t, await ivan.client.organization.getInvitation({ query: { id: invitationId } }), 'get-invitation')
  t.equal(got.organizationName, 'Acme Screens')
  t.equal(got.organizationSlug, org.slug)
  t.equal(got.inviterEmail, owner.email)
  t.equal(got.status, 'pending')

  // Someone else cannot take Ivan's invitation.
  const eve = await person('eve', 'Eve')
  refused(
    t,
    await eve.client.organization.acceptInvitation({ invitationId }),
    403,
    'YOU_ARE_NOT_THE_RECIPIENT_OF_THE_INVITATION',
    'accept by the wrong person',
  )
  refused(
    t,
    await eve.client.organization.getInvitation({ query: { id: invitationId } }),
    403,
    'YOU_ARE_NOT_THE_RECIPIENT_OF_THE_INVITATION',
    'get-invitation by the wrong person',
  )

  const accepted = ok(t, await ivan.client.organization.acceptInvitation({ invitationId }), 'accept-invitation')
  t.equal(accepted.invitation.status, 'accepted')
  t.equal(accepted.member.userId, ivan.id)
  t.equal(accepted.member.role, 'member')
  t.equal(accepted.member.organizationId, org.id)
  ivanMemberId = accepted.member.id
  t.equal((await rootSession(ivan.token)).body.session.active_organization_id, org.id, 'accepting makes the organization active')
  refused(t, await ivan.client.organization.acceptInvitation({ invitationId }), 400, 'INVITATION_NOT_FOUND', 'accepting twice')
  t.same(
    ok(t, await ivan.client.organization.listUserInvitations(), 'list-user-invitations after accepting'),
    [],
    'no pending invitations left',
  )
  const ivanOrgs = ok(t, await ivan.client.organization.list(), 'list as member')
  t.same(
    ivanOrgs.map((o) => o.id),
    [org.id],
  )
  refused(
    t,
    await owner.client.organization.inviteMember({ email: ivan.email, role: 'member', organizationId: org.id }),
    400,
    'USER_IS_ALREADY_A_MEMBER_OF_THIS_ORGANIZATION',
    'inviting a member',
  )

  // Rejected.
  const rita = await person('rita', 'Rita Rejecter')
  ok(t, await owner.client.organization.inviteMember({ email: rita.email, role: 'admin', organizationId: org.id }), 'invite rita')
  const ritaInvitation = (await invitationFromMail(t, rita.email)).id
  await verify(rita)
  const rejected = ok(t, await rita.client.organization.rejectInvitation({ invitationId: ritaInvitation }), 'reject-invitation')
  t.equal(rejected.invitation?.status, 'rejected')
  t.equal(rejected.member, null)
  refused(
    t,
    await rita.client.organization.acceptInvitation({ invitationId: ritaInvitation }),
    400,
    'INVITATION_NOT_FOUND',
    'accepting a rejected invitation',
  )

  // Cancelled.
  const carl = await person('carl', 'Carl Cancelled')
  ok(t, await owner.client.organization.inviteMember({ email: carl.email, role: 'member', organizationId: org.id }), 'invite carl')
  const carlInvitation = (await invitationFromMail(t, carl.email)).id
  const cancelled = ok(t, await owner.client.organization.cancelInvitation({ invitationId: carlInvitation }), 'cancel-invitation')
  t.equal((cancelled as { status: string }).status, 'canceled')
  refused(
    t,
    await carl.client.organization.acceptInvitation({ invitationId: carlInvitation }),
    400,
    'INVITATION_NOT_FOUND',
    'accepting a cancelled invitation',
  )
  refused(
    t,
    await carl.client.organization.getInvitation({ query: { id: carlInvitation } }),
    400,
    'INVITATION_NOT_FOUND',
    'get-invitation of a cancelled invitation',
  )

  const all = ok(t, await owner.client.organization.listInvitations({ query: { organizationId: org.id } }), 'list-invitations')
  const status = Object.fromEntries(all.map((i) => [i.email, i.status]))
  t.same(status, { [ivan.email]: 'accepted', [rita.email]: 'rejected', [carl.email]: 'canceled' }, 'every invitation with its outcome')

  const members = ok(t, await owner.client.organization.listMembers({ query: { organizationId: org.id } }), 'list-members')
  t.same(members.members.map((m) => m.userId).sort(), [owner.id, ivan.id].sort(), 'only the owner and the accepted invitee are members')
  t.equal(members.total, 2)
})

t.test('members: active member, roles, permissions, and what a member may not do', async (t) => {
  const active = ok(t, await ivan.client.organization.getActiveMember(), 'get-active-member')
  t.equal(active.id, ivanMemberId)
  t.equal(active.userId, ivan.id)
  t.equal(active.role, 'member')
  t.same(ok(t, await ivan.client.organization.getActiveMemberRole(), 'get-active-member-role'), { role: 'member' })
  t.same(ok(t, await owner.client.organization.getActiveMemberRole(), 'owner get-active-member-role'), { role: 'owner' })
  t.same(ok(t, await owner.client.organization.getActiveMemberRole({ query: { userId: ivan.id } }), "owner reads ivan's role"), {
    role: 'member',
  })

  const ownerMay = ok(t, await owner.client.organization.hasPermission({ permissions: { member: ['delete'] } }), 'owner has-permission')
  t.equal(ownerMay.success, true, 'the owner may delete members')
  const memberMay = ok(t, await ivan.client.organization.hasPermission({ permissions: { member: ['delete'] } }), 'member has-permission')
  t.equal(memberMay.success, false, 'a member may not delete members')
  t.equal(
    ok(t, await owner.client.organization.hasPermission({ permissions: { organization: ['delete'] } }), 'owner org delete').success,
    true,
  )
  t.equal(ok(t, await ivan.client.organization.hasPermission({ permissions: { invitation: ['create'] } }), 'member invite').success, false)

  // What a member may not do.
  refused(
    t,
    await ivan.client.organization.inviteMember({ email: uniqueEmail('friend'), role: 'member' }),
    403,
    'YOU_ARE_NOT_ALLOWED_TO_INVITE_USERS_TO_THIS_ORGANIZATION',
    'member invites',
  )
  refused(
    t,
    await ivan.client.organization.delete({ organizationId: org.id }),
    403,
    'YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_ORGANIZATION',
    'member deletes the organization',
  )
  refused(
    t,
    await ivan.client.organization.update({ organizationId: org.id, data: { name: 'Taken Over' } }),
    403,
    'YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_ORGANIZATION',
    'member renames the organization',
  )
  const ownerMember = ok(t, await owner.client.organization.getActiveMember(), 'owner get-active-member')
  refused(
    t,
    await ivan.client.organization.updateMemberRole({ memberId: ownerMember.id, role: 'member' }),
    403,
    'YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_MEMBER',
    'member demotes the owner',
  )
  refused(
    t,
    await ivan.client.organization.updateMemberRole({ memberId: ivanMemberId, role: 'admin' }),
    403,
    'YOU_ARE_NOT_ALLOWED_TO_UPDATE_THIS_MEMBER',
    'member promotes themselves',
  )
  const still = ok(t, await owner.client.organization.getFullOrganization(), 'get-full-organization')
  t.equal(still.name, 'Acme Screens', 'the organization is unchanged')
  t.same(still.members.map((m) => m.role).sort(), ['member', 'owner'], 'roles are unchanged')

  // The owner changes Ivan's role.
  const promoted = ok(t, await owner.client.organization.updateMemberRole({ memberId: ivanMemberId, role: 'admin' }), 'update-member-role')
  t.equal(promoted.role, 'admin')
  t.same(ok(t, await ivan.client.organization.getActiveMemberRole(), 'ivan role after promotion'), { role: 'admin' })
  t.equal(
    ok(t, await ivan.client.organization.hasPermission({ permissions: { member: ['delete'] } }), 'admin has-permission').success,
    true,
    'an admin may delete members',
  )
  t.equal(
    ok(t, await ivan.client.organization.hasPermission({ permissions: { organization: ['delete'] } }), 'admin org delete').success,
    false,
    'an admin may not delete the organization',
  )
  refused(
    t,
    await owner.client.organization.updateMemberRole({ memberId: ivanMemberId, role: 'emperor' }),
    400,
    'ROLE_NOT_FOUND',
    'an unknown role',
  )
  ok(t, await owner.client.organization.updateMemberRole({ memberId: ivanMemberId, role: 'member' }), 'demote back')
  t.same(ok(t, await ivan.client.organization.getActiveMemberRole(), 'ivan role after demotion'), { role: 'member' })
})

t.test('teams: create a team and add a member', async (t) => {
  const team = ok(t, await owner.client.organization.createTeam({ name: 'Ops', organizationId: org.id }), 'create-team')
  t.equal(team.name, 'Ops')
  t.equal(team.organizationId, org.id)
  teamId = team.id

  const added = ok(t, await owner.client.organization.addTeamMember({ teamId, userId: ivan.id }), 'add-team-member')
  t.equal(added.userId, ivan.id)
  t.equal(added.teamId, teamId)

  const teamMembers = ok(t, await ivan.client.organization.listTeamMembers({ query: { teamId } }), 'list-team-members')
  t.same(
    teamMembers.map((m) => m.userId),
    [ivan.id],
    'ivan is in the team',
  )
  const ivanTeams = ok(t, await ivan.client.organization.listUserTeams(), 'list-user-teams')
  t.ok(ivanTeams.some((x) => x.id === teamId && x.name === 'Ops'))
  const teams = ok(t, await owner.client.organization.listTeams({ query: { organizationId: org.id } }), 'list-teams')
  t.ok(teams.some((x) => x.id === teamId))

  const outsider = await person('teamless', 'Teamless')
  refused(
    t,
    await owner.client.organization.addTeamMember({ teamId, userId: outsider.id }),
    400,
    'USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION',
    'adding a non-member to a team',
  )
  refused(
    t,
    await ivan.client.organization.createTeam({ name: 'Shadow', organizationId: org.id }),
    403,
    /NOT_ALLOWED/,
    'member creates a team',
  )
})

t.test('remove-member and leave', async (t) => {
  const mia = await person('mia', 'Mia Member')
  ok(t, await owner.client.organization.inviteMember({ email: mia.email, role: 'member', organizationId: org.id }), 'invite mia')
  await verify(mia)
  ok(t, await mia.client.organization.acceptInvitation({ invitationId: (await invitationFromMail(t, mia.email)).id }), 'mia accepts')

  // A member cannot remove another member.
  refused(
    t,
    await ivan.client.organization.removeMember({ memberIdOrEmail: mia.email, organizationId: org.id }),
    401,
    'YOU_ARE_NOT_ALLOWED_TO_DELETE_THIS_MEMBER',
    'member removes a member',
  )

  const removed = ok(
    t,
    await owner.client.organization.removeMember({ memberIdOrEmail: mia.email, organizationId: org.id }),
    'remove-member',
  )
  t.equal(removed.member.userId, mia.id)
  const afterRemove = ok(t, await owner.client.organization.listMembers({ query: { organizationId: org.id } }), 'list-members')
  t.notOk(
    afterRemove.members.some((m) => m.userId === mia.id),
    'mia is gone',
  )
  refused(
    t,
    await mia.client.organization.getFullOrganization({ query: { organizationId: org.id } }),
    403,
    'USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION',
    'removed member reads the organization',
  )
  t.same(ok(t, await mia.client.organization.list(), 'mia lists'), [])

  refused(
    t,
    await owner.client.organization.leave({ organizationId: org.id }),
    400,
    'YOU_CANNOT_LEAVE_THE_ORGANIZATION_AS_THE_ONLY_OWNER',
    'the only owner leaves',
  )

  const left = ok(t, await ivan.client.organization.leave({ organizationId: org.id }), 'leave')
  t.equal(left.userId, ivan.id)
  t.equal((await rootSession(ivan.token)).body.session.active_organization_id, null, 'leaving clears the active organization')
  const afterLeave = ok(t, await owner.client.organization.listMembers({ query: { organizationId: org.id } }), 'list-members')
  t.same(
    afterLeave.members.map((m) => m.userId),
    [owner.id],
    'only the owner is left',
  )
  refused(t, await ivan.client.organization.leave({ organizationId: org.id }), 400, 'MEMBER_NOT_FOUND', 'leaving twice')
})

t.test('delete organization', async (t) => {
  const deleted = ok(t, await owner.client.organization.delete({ organizationId: org.id }), 'delete')
  t.equal((deleted as { id: string }).id, org.id)
  const list = ok(t, await owner.client.organization.list(), 'list after delete')
  t.same(
    list.map((o) => o.id),
    [side.id],
    'only the other organization is left',
  )
  t.equal((await rootSession(owner.token)).body.session.active_organization_id, null, 'the deleted organization is no longer active')
  refused(
    t,
    await owner.client.organization.getFullOrganization({ query: { organizationId: org.id } }),
    400,
    'ORGANIZATION_NOT_FOUND',
    'reading a deleted organization',
  )
  refused(
    t,
    await owner.client.organization.setActive({ organizationId: org.id }),
    403,
    'USER_IS_NOT_A_MEMBER_OF_THE_ORGANIZATION',
    'activating a deleted organization',
  )
  // Its slug is free again.
  t.same(ok(t, await owner.client.organization.checkSlug({ slug: org.slug }), 'check-slug after delete'), { status: true })
})
