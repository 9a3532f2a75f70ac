import type { EventRow } from './repository.js'

export const eventRecordSchema = {
  $id: 'Event',
  type: 'object',
  required: ['id', 'type', 'deviceId', 'userId', 'organization_id', 'data', 'created_at'],
  properties: {
    id: { type: 'string' },
    type: {
      type: 'string',
      description:
        'device.paired, device.denied, device.credentials_issued, device.credentials_revoked, device.connected, device.disconnected, …',
    },
    deviceId: { type: ['string', 'null'] },
    userId: { type: ['string', 'null'] },
    organization_id: { type: ['string', 'null'] },
    data: { type: 'object', additionalProperties: true },
    created_at: { type: 'string', format: 'date-time' },
  },
} as const

export function toEventRecord(e: EventRow) {
  return {
    id: e.id,
    type: e.type,
    deviceId: e.deviceId,
    userId: e.userId,
    organization_id: e.organizationId,
    data: e.data,
    created_at: e.createdAt.toISOString(),
  }
}
