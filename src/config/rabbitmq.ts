// RabbitMQ as the external broker (docs/rabbitmq.md).
import { z } from 'zod'
import { type Section, flag, optionalUrl, variable } from './variables.js'

export const rabbitmq = {
  title: 'RabbitMQ',
  intro:
    'RabbitMQ as the external broker: presence from its event exchange, kicks and devices as internal users through its management API ([rabbitmq.md](rabbitmq.md)).',
  variables: {
    mqtt: {
      rabbitmq: {
        vhost: variable('RABBITMQ_VHOST', z.string().min(1).default('/'), 'the vhost devices may use'),
        amqpUrl: variable('RABBITMQ_AMQP_URL', optionalUrl, "AMQP URL: presence is read from RabbitMQ's event exchange when it is set"),
        managementUrl: variable(
          'RABBITMQ_MANAGEMENT_URL',
          optionalUrl,
          'management API URL: devices are disconnected through it, and made internal users (`RABBITMQ_DEVICE_USERS`), when it is set',
        ),
        deviceUsers: variable(
          'RABBITMQ_DEVICE_USERS',
          flag(true),
          'with `RABBITMQ_MANAGEMENT_URL`: each device becomes a RabbitMQ internal user when its secret is issued or at its first connect, so RabbitMQ admits it without asking this service; `false`: every connect asks the HTTP routes',
        ),
        presenceQueue: variable(
          'RABBITMQ_PRESENCE_QUEUE',
          z.string().min(1).max(255).default('dps.presence'),
          "the queue this service reads RabbitMQ's connection events from",
        ),
      },
    },
  },
} satisfies Section
