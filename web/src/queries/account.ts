// The signed-in account through Better Auth: where it is signed in, its API keys, its name.
import { mutationOptions, queryOptions } from '@tanstack/react-query'
import { authClient, authData } from '../auth'
import { apiKeyAuth } from '../auth-extras'

const all = ['account'] as const

/** @public: also read by the data layer's tests (test/web/data-layer.test.ts loads this module by path, which knip does not follow). */
export const accountKeys = {
  all,
  sessions: () => [...all, 'sessions'] as const,
  apiKeys: () => [...all, 'api-keys'] as const,
}

type ApiKey = { id: string; name?: string | null; start?: string | null; createdAt: string | Date }

export const accountQueries = {
  sessions: () => queryOptions({ queryKey: accountKeys.sessions(), queryFn: () => authData(authClient.listSessions()) }),
  apiKeys: () =>
    queryOptions({
      queryKey: accountKeys.apiKeys(),
      queryFn: async () => {
        // Better Auth's API key plugin has answered both a bare list and {apiKeys}.
        const listed = (await authData(apiKeyAuth.apiKey.list())) as unknown as ApiKey[] | { apiKeys?: ApiKey[] }
        return Array.isArray(listed) ? listed : (listed.apiKeys ?? [])
      },
    }),
}

export const accountMutations = {
  rename: () => mutationOptions({ mutationFn: (name: string) => authData(authClient.updateUser({ name })) }),
  revokeSession: () =>
    mutationOptions({
      mutationFn: (token: string) => authData(authClient.revokeSession({ token })),
      onSettled: (_res, _err, _token, _r, { client }) => void client.invalidateQueries({ queryKey: accountKeys.sessions() }),
    }),
  revokeOtherSessions: () =>
    mutationOptions({
      mutationFn: () => authData(authClient.revokeOtherSessions()),
      onSettled: (_res, _err, _v, _r, { client }) => void client.invalidateQueries({ queryKey: accountKeys.sessions() }),
    }),
  /** Creates a key; the answer carries the key itself, shown once. */
  createApiKey: () =>
    mutationOptions({
      mutationFn: async (name: string) => (await authData(apiKeyAuth.apiKey.create({ name }))) as { key: string },
      onSuccess: (_k, _name, _r, { client }) => void client.invalidateQueries({ queryKey: accountKeys.apiKeys() }),
    }),
  deleteApiKey: () =>
    mutationOptions({
      mutationFn: (keyId: string) => authData(apiKeyAuth.apiKey.delete({ keyId })),
      onSettled: (_res, _err, _keyId, _r, { client }) => void client.invalidateQueries({ queryKey: accountKeys.apiKeys() }),
    }),
}
