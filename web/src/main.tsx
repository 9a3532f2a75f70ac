import { QueryClient, QueryClientProvider } from '@tanstack/react-query'
import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { createBrowserRouter, RouterProvider } from 'react-router'
import { Layout, RequireSession } from './layout'
import { DevicesPage } from './pages/devices'
import './styles.css'

const queryClient = new QueryClient({
  defaultOptions: {
    // A refused request (4xx) will not succeed on its own; the service being away might.
    queries: { retry: (n, err) => n < 2 && !(err as { status?: number }).status, refetchOnWindowFocus: true },
  },
})

const router = createBrowserRouter([
  {
    element: <Layout />,
    children: [
      // Every screen but the device list is its own chunk, loaded when first opened: the first
      // load of / carries only what the list needs.
      { path: '/signin', lazy: async () => ({ Component: (await import('./pages/sign-in')).SignInPage }) },
      { path: '/signup', lazy: async () => ({ Component: (await import('./pages/sign-up')).SignUpPage }) },
      { path: '/forgot-password', lazy: async () => ({ Component: (await import('./pages/password')).ForgotPasswordPage }) },
      { path: '/new-password', lazy: async () => ({ Component: (await import('./pages/password')).NewPasswordPage }) },
      {
        element: <RequireSession />,
        children: [
          { path: '/', element: <DevicesPage /> },
          // Notifications about several devices link here.
          { path: '/devices', element: <DevicesPage /> },
          { path: '/pair', lazy: async () => ({ Component: (await import('./pages/pair')).PairPage }) },
          { path: '/devices/:id', lazy: async () => ({ Component: (await import('./pages/device')).DevicePage }) },
          { path: '/account', lazy: async () => ({ Component: (await import('./pages/account')).AccountPage }) },
          { path: '/admin', lazy: async () => ({ Component: (await import('./pages/admin')).AdminPage }) },
          { path: '/admin/firmware', lazy: async () => ({ Component: (await import('./pages/firmware')).FirmwarePage }) },
          { path: '/organizations', lazy: async () => ({ Component: (await import('./pages/organizations')).OrganizationsPage }) },
          { path: '/playlists', lazy: async () => ({ Component: (await import('./pages/playlists')).PlaylistsPage }) },
          { path: '/playlists/:id', lazy: async () => ({ Component: (await import('./pages/playlists')).PlaylistPage }) },
          { path: '/screens', lazy: async () => ({ Component: (await import('./pages/screens')).ScreensPage }) },
          { path: '/screens/:id', lazy: async () => ({ Component: (await import('./pages/screens')).ScreenPage }) },
          // An invitation e-mail links here.
          { path: '/invitations/:id', lazy: async () => ({ Component: (await import('./pages/invitation')).InvitationPage }) },
        ],
      },
      { path: '*', element: <NotFound /> },
    ],
  },
])

function NotFound() {
  return (
    <div className="card narrow">
      <h1>Page not found</h1>
      <p>
        There is nothing at this address. <a href="/">Go to your devices</a>.
      </p>
    </div>
  )
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
)
