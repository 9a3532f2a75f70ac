// Uploaded photos: a signed link to show one.
import { queryOptions } from '@tanstack/react-query'
import { api, data } from '../api'

const all = ['uploads'] as const

const uploadKeys = {
  all,
  url: (key: string) => [...all, 'url', key] as const,
}

export const uploadQueries = {
  url: (key: string) =>
    queryOptions({
      queryKey: uploadKeys.url(key),
      queryFn: async () => data(await api.GET('/api/upload/url', { params: { query: { key } } })).url,
      // The link stays valid longer than this: not signed again on every render.
      staleTime: 10 * 60_000,
    }),
}
