// The production checklist (docs/deployment.md), checked at start when NODE_ENV=production:
// what would make a deployment unsafe refuses the start; what is merely unusual is logged.

/** What the checklist looks at, taken from the environment by loadConfig. */
export type DeploymentFacts = {
  /** AUTH_SECRET was given (its length is checked with the other values). */
  authSecretSet: boolean
  /** BASE_URL as given, if it was. */
  baseUrl?: string
  allowHttpBaseUrl: boolean
  host: string
  mqttHost: string
  mqttTlsHost: string
  trustProxy: boolean | string[]
  smtpUrl?: string
  trustedOrigins: readonly string[]
  demoEnabled: boolean
  adminEmails: readonly string[]
  deviceAutoApproveUserEmail?: string
  mqttTls: boolean
  /** MQTT_PUBLIC_URL as given, if it was. */
  mqttPublicUrl?: string
  mqttExternal: boolean
}

/** Addresses only this machine reaches. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '')
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h)
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname
  } catch {
    return undefined
  }
}

export function productionChecks(f: DeploymentFacts): { problems: string[]; warnings: string[] } {
  const problems: string[] = []
  const warnings: string[] = []
  const https = f.baseUrl?.toLowerCase().startsWith('https://') ?? false

  if (!f.authSecretSet) {
    problems.push(
      'AUTH_SECRET is not set: give it a random value of at least 32 characters (openssl rand -base64 48). One generated into DATA_DIR is lost with the folder and differs per instance',
    )
  }
  if (!f.baseUrl) {
    problems.push(
      'BASE_URL is not set: give the public https URL browsers and devices reach the service at (https://frames.example.com); e-mail links, passkeys and the devices’ WebSocket URL derive from it',
    )
  } else if (!https && !f.allowHttpBaseUrl) {
    problems.push(
      `BASE_URL is ${f.baseUrl}, not https: serve the service through a TLS reverse proxy (docs/deployment.md), or set ALLOW_HTTP_BASE_URL=true for a network you trust, such as a home LAN`,
    )
  }
  if (f.deviceAutoApproveUserEmail) {
    // It hands every device that asks to one account: never on a real deployment.
    problems.push('DEVICE_AUTO_APPROVE_USER_EMAIL is for development only and is refused when NODE_ENV=production')
  }

  if (!f.smtpUrl) {
    warnings.push(
      'SMTP_URL is not set: e-mails (verification, password reset, sign-in links and codes, invitations) are only written to DATA_DIR/outbox and their links to the log; nobody receives them',
    )
  }
  const devOrigins = f.trustedOrigins.filter((o) => {
    const host = hostOf(o)
    return (host !== undefined && isLoopbackHost(host)) || (https && o.toLowerCase().startsWith('http://'))
  })
  if (devOrigins.length) {
    warnings.push(
      `TRUSTED_ORIGINS lists ${devOrigins.join(', ')}: pages there may use your users’ session cookies; remove development origins`,
    )
  }
  if (f.trustProxy === false && https) {
    warnings.push(
      'TRUST_PROXY is not set although BASE_URL is https, so a TLS proxy sits in front of the service: every client then has the proxy’s address and they share one rate limit. Set TRUST_PROXY to the proxy’s address (127.0.0.1 on the same machine)',
    )
  } else if (f.trustProxy === false && isLoopbackHost(f.host)) {
    warnings.push(
      `HOST is ${f.host}: only this machine reaches the HTTP API. Set HOST=0.0.0.0 (or this machine’s LAN address) to serve others`,
    )
  }
  const deviceListener = f.mqttTls ? f.mqttTlsHost : f.mqttHost
  if (!f.mqttExternal && !f.mqttPublicUrl && isLoopbackHost(deviceListener)) {
    warnings.push(
      `MQTT listens on ${deviceListener} only: devices on other machines cannot connect. Set ${f.mqttTls ? 'MQTT_TLS_HOST' : 'MQTT_HOST'}=0.0.0.0`,
    )
  }
  const mqttsUrl = f.mqttPublicUrl?.toLowerCase().startsWith('mqtts://') ?? false
  if (!f.mqttExternal && !f.mqttTls && !mqttsUrl && !f.allowHttpBaseUrl) {
    warnings.push(
      'MQTT_TLS_CERT and MQTT_TLS_KEY are not set: devices connect over plain MQTT and their secret crosses the network readable. Give the listener a certificate (docs/deployment.md)',
    )
  }
  if (f.demoEnabled) {
    warnings.push('DEMO_ENABLED is true: GET /api/demo draws and stores an image for anyone, without an account. Set DEMO_ENABLED=false')
  }
  if (!f.adminEmails.length) {
    warnings.push('ADMIN_EMAILS is empty: nobody becomes an admin, so nobody can grant credits or publish firmware')
  }
  return { problems, warnings }
}
