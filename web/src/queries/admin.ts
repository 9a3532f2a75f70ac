// Administration through Better Auth's admin plugin: users, their sessions, bans, acting as one.
import { mutationOptions, queryOptions } from '@tanstack/react-query'
import { authClient, authData } from '../auth'

const all = ['admin'] as const

/** @public: also read by the data layer's tests (test/web/data-layer.test.ts loads this module by path, which knip does not follow). */
export const adminKeys = {
  all,
  users: () => [...all, 'users'] as const,
  userSearch: (search: string) => [...all, 'users', { search }] as const,
  userSessions: (userId: string) => [...all, 'user-sessions', userId] as const,
}

export const adminQueries = {
  /** The latest 50 users, or those whose e-mail contains `search`. */
  users: (search: string) =>
    queryOptions({
      queryKey: adminKeys.userSearch(search),
      queryFn: () =>
        authData(
          authClient.admin.listUsers({
            query: {
              limit: 50,
              sortBy: 'createdAt',
              sortDirection: 'desc',
              ...(search ? { searchValue: search, searchField: 'email', searchOperator: 'contains' } : {}),
            },
          }),
        ),
    }),
  userSessions: (userId: string) =>
    queryOptions({ queryKey: adminKeys.userSessions(userId), queryFn: () => authData(authClient.admin.listUserSessions({ userId })) }),
}

export const adminMutations = {
  ban: () =>
    mutationOptions({
      mutationFn: (userId: string) => authData(authClient.admin.banUser({ userId, banReason: 'banned from the console' })),
      onSettled: (_res, _err, _v, _r, { client }) => void client.invalidateQueries({ queryKey: adminKeys.users() }),
    }),
  unban: () =>
    mutationOptions({
      mutationFn: (userId: string) => authData(authClient.admin.unbanUser({ userId })),
      onSettled: (_res, _err, _v, _r, { client }) => void client.invalidateQueries({ queryKey: adminKeys.users() }),
    }),
  /** Acting as another user: nothing cached is theirs, so every query is dropped (the mutation's own state stays, for its caller). */
  impersonate: () =>
    mutationOptions({
      mutationFn: (userId: string) => authData(authClient.admin.impersonateUser({ userId })),
      onSuccess: (_res, _v, _r, { client }) => client.removeQueries(),
    }),
  revokeUserSession: (userId: string) =>
    mutationOptions({
      mutationFn: (sessionToken: string) => authData(authClient.admin.revokeUserSession({ sessionToken })),
      onSettled: (_res, _err, _v, _r, { client }) => void client.invalidateQueries({ queryKey: adminKeys.userSessions(userId) }),
    }),
}
