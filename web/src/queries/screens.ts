// Screens: the list, one screen, the renderers the server offers, the preview of the editor's
// draft for a frame, and what changes them. A change answers the whole screen, which replaces the
// cached one; the list (names, errors) is read again. The preview draws the unsaved draft (POST
// .../preview): looking at a draft sends the frames nothing, only saving does.
import { mutationOptions, type QueryClient, queryOptions } from '@tanstack/react-query'
import { api, data, type JsonBody, type Screen } from '../api'

const all = ['screens'] as const
const one = (id: string) => [...all, 'one', id] as const

/** @public: also read by the data layer's tests (test/web/screens-data.test.ts loads this module by path, which knip does not follow). */
export const screenKeys = {
  all,
  list: () => [...all, 'list'] as const,
  renderers: () => [...all, 'renderers'] as const,
  one,
  detail: (id: string) => [...one(id), 'detail'] as const,
  /**
   * The draft (with its frame) is part of the key, so each edit is a preview of its own and going
   * back to an earlier text is the cached picture; `version` (screenVersion) makes new data a new preview.
   */
  preview: (id: string, draft: ScreenDraft, version: string) => [...one(id), 'preview', draft, version] as const,
}

/** What a preview depends on besides the frame: the saved screen and the data it last got. */
export const screenVersion = (s: Pick<Screen, 'updatedAt' | 'dataAt'>) => `${s.updatedAt}/${s.dataAt ?? ''}`

export const screenQueries = {
  list: () => queryOptions({ queryKey: screenKeys.list(), queryFn: async () => data(await api.GET('/api/screens')).screens }),
  /**
   * Which renderers this server draws with (Chromium only where it is installed), and why not, so
   * the forms offer only what saving would accept. A minute fresh: installing Chromium needs no restart.
   */
  renderers: () =>
    queryOptions({
      queryKey: screenKeys.renderers(),
      queryFn: async () => data(await api.GET('/api/screens/renderers')).renderers,
      staleTime: 60_000,
    }),
  detail: (id: string) =>
    queryOptions({
      queryKey: screenKeys.detail(id),
      queryFn: async () => data(await api.GET('/api/screens/{id}', { params: { path: { id } } })),
      // Data pushed by webhook or fetched from its URL (and errors) arrive without the page asking.
      refetchInterval: 30_000,
    }),
  /**
   * The PNG the frame (`draft.deviceId`) would show with the draft saved: its size, inks and
   * dithering; without a frame, the service's default panel. Nothing is saved or sent. A template
   * that fails is a 422 with the reason, which is this query's error (the saved screen's lastError
   * is not touched).
   */
  preview: (id: string, draft: ScreenDraft, version: string) =>
    queryOptions({
      queryKey: screenKeys.preview(id, draft, version),
      queryFn: async ({ signal }) =>
        data(
          await api.POST('/api/screens/{id}/preview', {
            params: { path: { id } },
            body: draft,
            parseAs: 'blob',
            // A draft typed over before it was drawn is not waited for.
            signal,
          }),
        ) as Blob,
      // A render failure is the template's, not the network's: asking again draws the same.
      retry: false,
      staleTime: Number.POSITIVE_INFINITY,
    }),
}

export type ScreenCreate = JsonBody<'/api/screens', 'post'>
export type ScreenPatch = JsonBody<'/api/screens/{id}', 'patch'>
/** The editor's unsaved template, CSS, variables (what it leaves out is the saved screen's), and the frame to draw for. */
export type ScreenDraft = JsonBody<'/api/screens/{id}/preview', 'post'>

function saved(client: QueryClient, s: Screen) {
  client.setQueryData(screenKeys.detail(s.id), s)
  void client.invalidateQueries({ queryKey: screenKeys.list() })
}

export const screenMutations = {
  /** Creates a screen: the answer carries its webhook token, shown this once. */
  create: () =>
    mutationOptions({
      mutationFn: async (body: ScreenCreate) => data(await api.POST('/api/screens', { body })),
      onSuccess: (_s, _body, _r, { client }) => client.invalidateQueries({ queryKey: screenKeys.list() }),
    }),
  /** A trmnlp project's files (path to text) as a screen; its token too is shown once. */
  importRecipe: () =>
    mutationOptions({
      mutationFn: async (body: JsonBody<'/api/screens/recipes', 'post'>) => data(await api.POST('/api/screens/recipes', { body })),
      onSuccess: (_s, _body, _r, { client }) => client.invalidateQueries({ queryKey: screenKeys.list() }),
    }),
  /** Saves changes (the frames showing the screen then get it); the answer is shown as it is. */
  patch: (id: string) =>
    mutationOptions({
      mutationFn: async (body: ScreenPatch) => data(await api.PATCH('/api/screens/{id}', { params: { path: { id } }, body })),
      onSuccess: (s, _body, _r, { client }) => saved(client, s),
    }),
  /** Deletes the screen; the list is read again before the caller leaves its page. */
  remove: (id: string) =>
    mutationOptions({
      mutationFn: async () => {
        const res = await api.DELETE('/api/screens/{id}', { params: { path: { id } } })
        // 204 has no body: only a refusal (still in a playlist) has something to say.
        if (!res.response.ok) data(res)
      },
      onSuccess: async (_v, _none, _r, { client }) => {
        client.removeQueries({ queryKey: screenKeys.one(id) })
        await client.invalidateQueries({ queryKey: screenKeys.list() })
      },
    }),
  /** Makes the screen a frame's picture now; the screen's record (its lastError) is read again. */
  show: (id: string) =>
    mutationOptions({
      mutationFn: async (deviceId: string) =>
        data(await api.POST('/api/screens/{id}/show', { params: { path: { id } }, body: { deviceId } })),
      onSettled: (_res, _err, _deviceId, _r, { client }) => client.invalidateQueries({ queryKey: screenKeys.detail(id) }),
    }),
  /** A new webhook token, shown once: the old one stops working. */
  rotateToken: (id: string) =>
    mutationOptions({
      mutationFn: async () => data(await api.POST('/api/screens/{id}/token', { params: { path: { id } } })).token,
    }),
}
