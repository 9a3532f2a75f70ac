// /api/playlists (a user's or an organization's playlists and their items) and
// /api/device/:id/schedule (a device's day plan: which playlist when, and sleep windows).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { principalOf } from '../auth/route-auth.js'
import type { Database } from '../db/client.js'
import { deviceAccess, deviceOf } from '../devices/route-access.js'
import { callerSecurity as security, errorResponses as errors } from '../http/route-schemas.js'
import { SharedRef } from '../http/typebox.js'
import type { PlaylistService } from './playlists.js'
import {
  playlistCreateSchema,
  playlistItemAddSchema,
  playlistOrderSchema,
  playlistPatchSchema,
  playlistRecordSchema,
  scheduleInputSchema,
  scheduleRecordSchema,
} from './records.js'
import type { ScheduleService } from './service.js'

const tags = ['device module']
const id = Type.String({ minLength: 1, maxLength: 128 })
const playlist = SharedRef(playlistRecordSchema)
const schedule = SharedRef(scheduleRecordSchema)

export async function scheduleRoutes(
  fastify: FastifyInstance,
  opts: { db: Database; playlists: PlaylistService; schedules: ScheduleService },
) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const { playlists, schedules } = opts
  const readable = deviceAccess(opts.db, 'read')
  const managed = deviceAccess(opts.db, 'manage')

  app.get(
    '/api/playlists',
    {
      schema: {
        tags,
        summary: 'Your playlists and those of your organizations',
        security,
        response: { 200: Type.Object({ playlists: Type.Array(playlist) }), ...errors(401) },
      },
    },
    async (req) => ({ playlists: await playlists.list(principalOf(req).userId) }),
  )

  app.post(
    '/api/playlists',
    {
      schema: {
        tags,
        summary: 'Create a playlist',
        description: 'With its items (at most 500), all checked before anything is stored.',
        security,
        body: playlistCreateSchema,
        response: { 201: playlist, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (req, reply) => reply.code(201).send(await playlists.create(principalOf(req).userId, req.body)),
  )

  app.get(
    '/api/playlists/:id',
    {
      schema: {
        tags,
        summary: 'Get a playlist with its items',
        security,
        params: Type.Object({ id }),
        response: { 200: playlist, ...errors(401, 404) },
      },
    },
    async (req) => playlists.get(principalOf(req).userId, req.params.id),
  )

  app.patch(
    '/api/playlists/:id',
    {
      schema: {
        tags,
        summary: 'Rename a playlist or change its mode or time per item',
        security,
        params: Type.Object({ id }),
        body: playlistPatchSchema,
        response: { 200: playlist, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => playlists.patch(principalOf(req).userId, req.params.id, req.body),
  )

  app.delete(
    '/api/playlists/:id',
    {
      schema: {
        tags,
        summary: 'Delete a playlist',
        description: "409 while a device's schedule names it.",
        security,
        params: Type.Object({ id }),
        response: { 204: Type.Null(), ...errors(401, 403, 404, 409) },
      },
    },
    async (req, reply) => {
      await playlists.remove(principalOf(req).userId, req.params.id)
      return reply.code(204).send(null)
    },
  )

  app.post(
    '/api/playlists/:id/items',
    {
      schema: {
        tags,
        summary: 'Add an item to a playlist',
        security,
        params: Type.Object({ id }),
        body: playlistItemAddSchema,
        response: { 201: playlist, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (req, reply) =>
      reply.code(201).send(await playlists.addItem(principalOf(req).userId, req.params.id, req.body.item, req.body.position)),
  )

  app.delete(
    '/api/playlists/:id/items/:itemId',
    {
      schema: {
        tags,
        summary: 'Remove an item from a playlist',
        security,
        params: Type.Object({ id, itemId: id }),
        response: { 200: playlist, ...errors(401, 403, 404) },
      },
    },
    async (req) => playlists.removeItem(principalOf(req).userId, req.params.id, req.params.itemId),
  )

  app.put(
    '/api/playlists/:id/order',
    {
      schema: {
        tags,
        summary: "Reorder a playlist's items",
        security,
        params: Type.Object({ id }),
        body: playlistOrderSchema,
        response: { 200: playlist, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => playlists.reorder(principalOf(req).userId, req.params.id, req.body.itemIds),
  )

  app.get(
    '/api/device/:id/schedule',
    {
      schema: {
        tags,
        summary: "A device's schedule, what it says now and when that next changes",
        security,
        params: Type.Object({ id }),
        response: { 200: schedule, ...errors(401, 404) },
      },
      preHandler: readable,
    },
    async (req) => schedules.get(deviceOf(req)),
  )

  app.put(
    '/api/device/:id/schedule',
    {
      schema: {
        tags,
        summary: "Set a device's schedule",
        description:
          'Rules may not overlap (400 names the two); sleep windows win over rules. Times are local to `timeZone`; a window whose `to` is not after its `from` ends the next day.',
        security,
        params: Type.Object({ id }),
        body: scheduleInputSchema,
        response: { 200: schedule, ...errors(400, 401, 403, 404) },
      },
      preHandler: managed,
    },
    async (req) => schedules.put(principalOf(req).userId, deviceOf(req), req.body),
  )

  app.delete(
    '/api/device/:id/schedule',
    {
      schema: {
        tags,
        summary: "Remove a device's schedule",
        description: 'What it shows stays; nothing more is sent on a schedule.',
        security,
        params: Type.Object({ id }),
        response: { 204: Type.Null(), ...errors(401, 403, 404) },
      },
      preHandler: managed,
    },
    async (req, reply) => {
      await schedules.remove(deviceOf(req))
      return reply.code(204).send(null)
    },
  )
}
