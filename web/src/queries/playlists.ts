// Playlists: the list, one playlist, and what changes them. A change answers the whole playlist,
// which replaces the cached one; the list (its counts, and the day plan's names) is read again.
import { mutationOptions, type QueryClient, queryOptions } from '@tanstack/react-query'
import { api, data, type Playlist, uploadPhoto } from '../api'

const all = ['playlists'] as const

/** @public: also read by the data layer's tests (test/web/data-layer.test.ts loads this module by path, which knip does not follow). */
export const playlistKeys = {
  all,
  list: () => [...all, 'list'] as const,
  detail: (id: string) => [...all, 'detail', id] as const,
}

export const playlistQueries = {
  list: () => queryOptions({ queryKey: playlistKeys.list(), queryFn: async () => data(await api.GET('/api/playlists')).playlists }),
  detail: (id: string) =>
    queryOptions({
      queryKey: playlistKeys.detail(id),
      queryFn: async () => data(await api.GET('/api/playlists/{id}', { params: { path: { id } } })),
    }),
}

function saved(client: QueryClient, p: Playlist) {
  client.setQueryData(playlistKeys.detail(p.id), p)
  void client.invalidateQueries({ queryKey: playlistKeys.list() })
}

type NewItem = { kind: 'upload'; key: string } | { kind: 'prompt'; promptId: string } | { kind: 'screen'; screenId: string }

const addItem = async (id: string, item: NewItem) =>
  data(await api.POST('/api/playlists/{id}/items', { params: { path: { id } }, body: { item } }))

export const playlistMutations = {
  /** Creates a playlist; the list is read again before the caller opens it. */
  create: () =>
    mutationOptions({
      mutationFn: async (body: { name: string; mode: 'sequential' | 'shuffle'; itemSeconds: number }) =>
        data(await api.POST('/api/playlists', { body })),
      onSuccess: (_p, _body, _r, { client }) => client.invalidateQueries({ queryKey: playlistKeys.list() }),
    }),
  /** Shown in the new order at once; the service's answer replaces it, and a refusal brings back the saved order. */
  reorder: (id: string) =>
    mutationOptions({
      mutationFn: async (itemIds: string[]) =>
        data(await api.PUT('/api/playlists/{id}/order', { params: { path: { id } }, body: { itemIds } })),
      onMutate: async (itemIds, { client }) => {
        await client.cancelQueries({ queryKey: playlistKeys.detail(id) })
        client.setQueryData(playlistKeys.detail(id), (p: Playlist | undefined) =>
          p ? { ...p, items: itemIds.flatMap((i) => p.items.filter((x) => x.id === i)) } : p,
        )
      },
      onSuccess: (p, _ids, _r, { client }) => saved(client, p),
      onError: (_err, _ids, _r, { client }) => void client.invalidateQueries({ queryKey: playlistKeys.detail(id) }),
    }),
  removeItem: (id: string) =>
    mutationOptions({
      mutationFn: async (itemId: string) =>
        data(await api.DELETE('/api/playlists/{id}/items/{itemId}', { params: { path: { id, itemId } } })),
      onSuccess: (p, _itemId, _r, { client }) => saved(client, p),
    }),
  /** Uploads a photo into the playlist. */
  addPhoto: (id: string) =>
    mutationOptions({
      mutationFn: async (file: File) => addItem(id, { kind: 'upload', key: await uploadPhoto(file) }),
      onSuccess: (p, _file, _r, { client }) => saved(client, p),
    }),
  /** Stores a prompt and adds it: a fresh picture is made from it each time it comes up. */
  addPrompt: (id: string) =>
    mutationOptions({
      mutationFn: async (text: string) =>
        addItem(id, { kind: 'prompt', promptId: data(await api.POST('/api/prompts', { body: { text } })).id }),
      onSuccess: (p, _text, _r, { client }) => saved(client, p),
    }),
  /** Adds a screen (from the screen's page, which picks the playlist): drawn each time it comes up. */
  addScreen: () =>
    mutationOptions({
      mutationFn: async ({ playlistId, screenId }: { playlistId: string; screenId: string }) =>
        addItem(playlistId, { kind: 'screen', screenId }),
      onSuccess: (p, _v, _r, { client }) => saved(client, p),
    }),
}
