// Credits: the signed-in user's balance, and an administrator's grant to a user.
import { mutationOptions, queryOptions } from '@tanstack/react-query'
import { api, data } from '../api'

const all = ['credits'] as const

export const creditKeys = {
  all,
  balance: () => [...all, 'balance'] as const,
}

export const creditQueries = {
  balance: () => queryOptions({ queryKey: creditKeys.balance(), queryFn: async () => data(await api.GET('/api/credits')) }),
}

export const creditMutations = {
  /** An administrator grants credits to a user (who may be themselves: the balance is read again). */
  grant: (userId: string) =>
    mutationOptions({
      mutationFn: async (v: { amount: string; note?: string }) => data(await api.POST('/api/admin/credits', { body: { userId, ...v } })),
      onSuccess: (_res, _v, _r, { client }) => void client.invalidateQueries({ queryKey: creditKeys.balance() }),
    }),
}
