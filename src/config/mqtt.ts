// The embedded broker's listeners and limits, or the external broker used instead.
import { z } from 'zod'
import { invalid } from './error.js'
import {
  type Environment,
  type Section,
  type Values,
  integer,
  optionalString,
  optionalText,
  optionalUrl,
  port,
  variable,
} from './variables.js'

export const mqtt = {
  title: 'MQTT',
  intro: 'See [mqtt.md](mqtt.md).',
  variables: {
    mqttPort: variable(
      'MQTT_PORT',
      port(1883),
      'MQTT TCP port; left unset and taken by another broker, the next free one (1884…1899), named in the log and handed to devices',
    ),
    mqtt: {
      // The MQTT listeners' addresses: devices may need the network while HTTP stays behind a local proxy.
      host: variable(
        'MQTT_HOST',
        optionalText,
        "the MQTT TCP listener's address: `0.0.0.0` lets devices on the network connect while HTTP stays on loopback behind a proxy",
        { default: '`HOST`' },
      ),
      tls: {
        certFile: variable(
          'MQTT_TLS_CERT',
          optionalString,
          'PEM file of the certificate chain; with it and `MQTT_TLS_KEY` set, MQTT over TLS listens too. Read again on `SIGHUP` (a renewed certificate without a restart)',
        ),
        keyFile: variable('MQTT_TLS_KEY', optionalString, "PEM file of the TLS listener's private key (set with `MQTT_TLS_CERT`)"),
        port: variable('MQTT_TLS_PORT', port(8883), "the TLS listener's port"),
        host: variable(
          'MQTT_TLS_HOST',
          optionalText,
          "the TLS listener's address: `0.0.0.0` with plain MQTT left on loopback serves devices over TLS only",
          { default: '`MQTT_HOST`' },
        ),
      },
      limits: {
        maxPacketSize: variable(
          'MQTT_MAX_PACKET_SIZE',
          integer(1024, 256 * 1024 * 1024, 256 * 1024),
          'largest MQTT packet accepted (bytes); bigger closes that connection',
        ),
        connectRate: variable(
          'MQTT_CONNECT_RATE',
          integer(0, undefined, 50),
          'new MQTT connections allowed per remote address per 10 s (`0` = no limit)',
        ),
        keepaliveLimit: variable(
          'MQTT_KEEPALIVE_MAX',
          integer(0, 65535, 3600),
          'largest keepalive a client may ask for (seconds, `0` = any)',
        ),
        queueLimit: variable('MQTT_QUEUE_LIMIT', integer(1, undefined, 100), 'messages queued before a session is ready'),
        maxInflight: variable('MQTT_MAX_INFLIGHT', integer(1, undefined, 100), 'inbound QoS 2 messages awaiting PUBREL per client'),
        maxSubscriptions: variable(
          'MQTT_MAX_SUBSCRIPTIONS',
          integer(0, undefined, 500),
          'topic filters one MQTT connection may ask for; past it each is refused with 0x80 (`0` = no cap)',
        ),
        inboundRate: variable(
          'MQTT_INBOUND_RATE',
          z.coerce.number().min(0).default(100),
          'PUBLISH packets per second per client; the excess is dropped and counted, a client over it for 15 s is disconnected (`0` = no limit)',
        ),
        inboundBurst: variable(
          'MQTT_INBOUND_BURST',
          integer(1, undefined, 200),
          'PUBLISH packets a client may send at once above `MQTT_INBOUND_RATE`',
        ),
      },
      offlineQueueLimit: variable(
        'MQTT_OFFLINE_QUEUE_LIMIT',
        integer(1, undefined, 1000),
        'messages the broker queues for an offline device (the outbox keeps the rest and sends them when it reconnects)',
      ),
      external: {
        url: variable('MQTT_EXTERNAL_URL', optionalUrl, 'use this external broker instead of the embedded one'),
        username: variable('MQTT_EXTERNAL_USERNAME', optionalString, "the service's user name at the external broker"),
        password: variable('MQTT_EXTERNAL_PASSWORD', optionalString, "the service's password at the external broker"),
      },
      authSecret: variable(
        'MQTT_AUTH_SECRET',
        z.string().min(16, 'MQTT_AUTH_SECRET must be at least 16 characters').optional(),
        'shared secret an external broker sends to `POST /api/device/mqtt-auth` (and RabbitMQ to `/api/device/rabbitmq/*`)',
      ),
    },
  },
} satisfies Section

export function mqttSettings(
  { mqttPort, mqtt: { host, tls, limits, external, ...fields } }: Values<typeof mqtt.variables>,
  httpHost: string,
  env: Environment,
) {
  if (Boolean(tls.certFile) !== Boolean(tls.keyFile)) throw invalid(['MQTT_TLS_CERT and MQTT_TLS_KEY must be set together'])
  const mqttHost = host ?? httpHost
  return {
    mqttPort,
    /**
     * MQTT_PORT left at its default: a first run beside another broker on 1883 (Mosquitto) then
     * takes the next free port and says so, instead of failing (an explicit MQTT_PORT must be free).
     */
    mqttPortIsDefault: !env.MQTT_PORT,
    mqtt: {
      ...fields,
      external: external.url ? { url: external.url, username: external.username, password: external.password } : undefined,
      /** The plain TCP listener's address (HOST unless MQTT_HOST says). */
      host: mqttHost,
      /** PEM files, read again on SIGHUP; the TLS listener starts only when both are set. */
      tls:
        tls.certFile && tls.keyFile
          ? { port: tls.port, host: tls.host ?? mqttHost, certFile: tls.certFile, keyFile: tls.keyFile }
          : undefined,
      limits: { ...limits, connectWindowMs: 10_000 },
    },
  }
}
