// loadConfig: the environment read through every domain's declarations into one typed Config.
// Reading only: what DATA_DIR should keep but does not hold yet is generated in memory and
// written by persistGenerated when the service starts.
import { productionChecks } from '../production-checks.js'
import { authSettings } from './auth.js'
import { nodeIdOf } from './cluster.js'
import { type Generated, keeper } from './data-dir.js'
import { devicesSettings } from './devices.js'
import { ConfigError } from './error.js'
import { firmwareSettings } from './firmware.js'
import { generationSettings } from './generation.js'
import { httpSettings, publicHostOf } from './http.js'
import { mqttSettings } from './mqtt.js'
import { notificationSettings } from './notifications.js'
import { scheduleSettings } from './schedules.js'
import { readSections } from './sections.js'
import { serviceSettings } from './service.js'
import { storageSettings } from './storage.js'
import type { Environment } from './variables.js'

/**
 * The validated configuration: whatever loadConfig builds from the declarations, so the type
 * cannot drift from them or from the code that reads it.
 */
export type Config = ReturnType<typeof loadConfig>

export function loadConfig(env: Environment = process.env) {
  const v = readSections(env)
  const service = serviceSettings(v.service)
  const http = httpSettings(v.http)
  const { mqttPort, mqttPortIsDefault, mqtt } = mqttSettings(v.mqtt, http.host, env)
  const notifications = notificationSettings(v.notifications, publicHostOf(http.host))
  const generation = generationSettings(v.generation)
  // Values kept in DATA_DIR but not there yet: generated here, written by persistGenerated at start,
  // in the order made (broker id first: see persistGenerated).
  const generated: Generated[] = []
  const keep = keeper(service.dataDir, generated)
  // Fixed per node: what this node's earlier runs left (connections, wills, schedule claims) is
  // recognised as its own after a restart.
  const nodeId = nodeIdOf(v.cluster, keep)
  const checked =
    v.service.nodeEnv === 'production'
      ? productionChecks({
          authSecretSet: Boolean(v.auth.authSecret),
          baseUrl: v.http.baseUrl,
          allowHttpBaseUrl: v.http.allowHttpBaseUrl,
          host: http.host,
          mqttHost: mqtt.host,
          mqttTlsHost: v.mqtt.mqtt.tls.host ?? mqtt.host,
          trustProxy: http.trustProxy,
          smtpUrl: v.mail.smtpUrl,
          trustedOrigins: http.trustedOrigins,
          demoEnabled: http.demoEnabled,
          adminEmails: v.auth.adminEmails,
          deviceAutoApproveUserEmail: v.devices.devices.autoApproveUserEmail,
          mqttTls: Boolean(mqtt.tls),
          mqttPublicUrl: v.devices.devices.mqttPublicUrl,
          mqttExternal: Boolean(mqtt.external),
        })
      : { problems: [], warnings: [] }
  if (checked.problems.length) {
    throw new ConfigError(
      `Refusing to start with NODE_ENV=production (docs/deployment.md, production checklist):\n${checked.problems.map((p) => `  ${p}`).join('\n')}`,
    )
  }
  return {
    ...service,
    ...http,
    /** What the production checklist found worth saying but not refusing; logged at start. */
    warnings: checked.warnings,
    /** This node's fixed id (MQTT_BROKER_ID, or generated once into DATA_DIR/broker-id). */
    nodeId,
    ...v.database,
    mqttPort,
    mqttPortIsDefault,
    ...authSettings(v.auth, http.baseUrl, keep),
    ...v.mail,
    ...storageSettings(v.storage),
    ...generation,
    ...v.deviceLogs,
    ...v.trmnl,
    ...firmwareSettings(v.firmware, service.dataDir, keep),
    ...scheduleSettings(v.schedules),
    ...v.screens,
    ...notifications,
    ...devicesSettings(v.devices, { baseUrl: http.baseUrl, mqttPort, tlsPort: mqtt.tls?.port }),
    mqtt: {
      ...mqtt,
      ...v.rabbitmq.mqtt,
      /** Cluster mode: heartbeat interval; a node silent for three is dead (its devices go offline, its wills are published). */
      heartbeatMs: v.cluster.heartbeatMs,
      /** This node's id (nodeId): each run of it is a broker of its own, `<node>~<run>` (device-broker.ts). */
      brokerId: nodeId,
    },
    ...v.downlink,
    /** What DATA_DIR should keep but did not hold yet (generated in memory): persistGenerated writes it at start. */
    generated: generated as readonly Generated[],
  }
}
