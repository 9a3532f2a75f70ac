// The frame around every screen, and the gate in front of the signed-in ones: no session, no
// screen (the sign-in page comes back here afterwards). A session that ends elsewhere (revoked
// from another browser, the user banned) ends here on the next request that fails with 401.
import { useQueryClient } from '@tanstack/react-query'
import { useEffect } from 'react'
import { Link, Navigate, Outlet, useLocation, useNavigate } from 'react-router'
import { authClient } from './auth'
import { LiveProvider } from './live'
import { Loading } from './ui'

export function Layout() {
  const { data: session } = authClient.useSession()
  const navigate = useNavigate()
  const queryClient = useQueryClient()
  const signOut = async () => {
    await authClient.signOut()
    queryClient.clear()
    navigate('/signin')
  }
  return (
    <>
      <a className="skip" href="#content">
        Skip to content
      </a>
      <header className="top">
        <Link className="brand" to="/">
          Display Pairing
        </Link>
        {session ? (
          <nav aria-label="Main">
            <Link to="/">Devices</Link>
            <Link to="/pair">Pair a frame</Link>
            <Link to="/playlists">Playlists</Link>
            <Link to="/screens">Screens</Link>
            <Link to="/organizations">Organizations</Link>
            <Link to="/account">Account</Link>
            {session.user.role === 'admin' ? <Link to="/admin">Administration</Link> : null}
            <button type="button" className="button secondary" onClick={signOut}>
              Sign out
            </button>
          </nav>
        ) : null}
      </header>
      <main id="content">
        <Outlet />
      </main>
    </>
  )
}

export function RequireSession() {
  const { data: session, isPending, refetch } = authClient.useSession()
  const location = useLocation()
  const queryClient = useQueryClient()
  // Any API answer 401 means the session ended (revoked, expired, user banned): look again.
  useEffect(
    () =>
      queryClient.getQueryCache().subscribe((e) => {
        const err = e.query.state.error as { status?: number } | null
        if (e.type === 'updated' && err?.status === 401) void refetch()
      }),
    [queryClient, refetch],
  )
  useEffect(
    () =>
      queryClient.getMutationCache().subscribe((e) => {
        const err = e.mutation?.state.error as { status?: number } | null | undefined
        if (err?.status === 401) void refetch()
      }),
    [queryClient, refetch],
  )
  if (isPending) return <Loading what="your session" />
  if (!session) return <Navigate to={`/signin?next=${encodeURIComponent(location.pathname + location.search)}`} replace />
  return (
    <LiveProvider>
      {(session.session as { impersonatedBy?: string | null }).impersonatedBy ? <ActingAs email={session.user.email} /> : null}
      {!session.user.emailVerified ? <VerifyNotice email={session.user.email} /> : null}
      <Outlet />
    </LiveProvider>
  )
}

function VerifyNotice({ email }: { email: string }) {
  const resend = () => authClient.sendVerificationEmail({ email, callbackURL: `${window.location.origin}/` })
  return (
    <div className="notice info" role="status">
      Check your inbox: we sent a link to <strong>{email}</strong> to confirm your address.{' '}
      <button type="button" className="button secondary" onClick={() => void resend()}>
        Send it again
      </button>
    </div>
  )
}

/** An administrator acting as a user sees it on every screen, with the way back. */
function ActingAs({ email }: { email: string }) {
  const stop = async () => {
    await authClient.admin.stopImpersonating()
    window.location.assign('/admin')
  }
  return (
    <div className="notice error" role="status">
      You are acting as <strong>{email}</strong>.{' '}
      <button type="button" className="button secondary" onClick={() => void stop()}>
        Stop acting as {email}
      </button>
    </div>
  )
}
