// Generating a picture: the models with their prices, starting a job and following it.
import { mutationOptions, queryOptions } from '@tanstack/react-query'
import { api, data, type JsonBody } from '../api'
import { creditKeys } from './credits'

const all = ['generation'] as const

/** @public: also read by the data layer's tests (test/web/data-layer.test.ts loads this module by path, which knip does not follow). */
export const generationKeys = {
  all,
  models: () => [...all, 'models'] as const,
  job: (id: string) => [...all, 'job', id] as const,
}

export const generationQueries = {
  models: () => queryOptions({ queryKey: generationKeys.models(), queryFn: async () => data(await api.GET('/api/models')).models ?? [] }),
  job: (id: string) =>
    queryOptions({
      queryKey: generationKeys.job(id),
      queryFn: async () => data(await api.GET('/api/generate/{id}', { params: { path: { id } } })),
    }),
}

export const generationMutations = {
  /** Starts a job: its price is taken from the balance at once, so the balance is read again. */
  start: () =>
    mutationOptions({
      mutationFn: async (body: JsonBody<'/api/generate', 'post'>) => data(await api.POST('/api/generate', { body })),
      onSuccess: (job, _body, _r, { client }) => {
        client.setQueryData(generationKeys.job(job.id), job)
        void client.invalidateQueries({ queryKey: creditKeys.balance() })
      },
    }),
}
