// The frame's own status: what an owner walks up to the frame to check (is it charged, is it
// still reaching us, which firmware, how good its Wi-Fi is), from the device context alone.
import { DateTime } from 'luxon'
import { sizesFor } from './layout.js'
import type { BuiltinScreen } from './types.js'
import { localeVar, stringVar, zoneVar } from './variables.js'

const template = `<div class="fs" style="width: {{ data.size.width }}px; height: {{ data.size.height }}px; padding: {{ data.size.pad }}px">
  <div class="fs-head" style="margin-bottom: {{ data.size.pad }}px">
    <div class="fs-name" style="font-size: {{ data.size.l }}px">{{ data.name }}</div>
    <div class="{% if data.online == true %}fs-badge fs-online{% else %}fs-badge fs-offline{% endif %}" style="font-size: {{ data.size.s }}px; padding: {{ data.size.pad | divided_by: 3 }}px {{ data.size.pad }}px">{{ data.onlineLabel }}</div>
  </div>
  <div class="fs-rows">
    {% for row in data.rows %}<div class="fs-row" style="padding-top: {{ data.size.pad | divided_by: 2 }}px; padding-bottom: {{ data.size.pad | divided_by: 2 }}px">
      <div class="fs-label" style="font-size: {{ data.size.s }}px">{{ row.label }}</div>
      <div class="fs-value-box">
        {% if row.meter %}<div class="fs-meter" style="width: {{ data.meterWidth }}px; height: {{ data.size.m }}px; margin-right: {{ data.size.pad }}px"><div class="fs-meter-fill" style="width: {{ row.meter }}%"></div></div>{% endif %}
        {% if row.bars %}<div class="fs-bars" style="height: {{ data.size.m }}px; margin-right: {{ data.size.pad }}px">{% for bar in row.bars %}<div class="{% if bar.on %}fs-bar fs-bar-on{% else %}fs-bar{% endif %}" style="width: {{ data.barWidth }}px; height: {{ bar.height }}%"></div>{% endfor %}</div>{% endif %}
        <div class="fs-value" style="font-size: {{ data.size.m }}px">{{ row.value }}</div>
      </div>
    </div>{% endfor %}
  </div>
</div>`

const css = `
.fs { display: flex; flex-direction: column; background-color: #ffffff; color: #000000; font-family: Inter; }
.fs-head { display: flex; flex-direction: row; justify-content: space-between; align-items: center; }
.fs-name { display: flex; font-weight: 700; }
.fs-badge { display: flex; border-radius: 9999px; font-weight: 700; }
.fs-online { background-color: #000000; color: #ffffff; }
.fs-offline { border: 2px solid #000000; color: #000000; }
.fs-rows { display: flex; flex-direction: column; flex: 1; }
.fs-row { display: flex; flex-direction: row; justify-content: space-between; align-items: center; border-bottom: 1px solid #aaaaaa; }
.fs-label { display: flex; color: #555555; }
.fs-value-box { display: flex; flex-direction: row; align-items: center; }
.fs-value { display: flex; font-weight: 700; }
.fs-meter { display: flex; border: 2px solid #000000; padding: 2px; }
.fs-meter-fill { display: flex; height: 100%; background-color: #000000; }
.fs-bars { display: flex; flex-direction: row; align-items: flex-end; }
.fs-bar { display: flex; border: 1px solid #000000; margin-left: 2px; }
.fs-bar-on { background-color: #000000; }
`

/** Wi-Fi strength words by RSSI in dBm, by the thresholds access-point vendors print. */
export function wifiQuality(rssi: number): { label: string; bars: number } {
  if (rssi >= -55) return { label: 'Excellent', bars: 4 }
  if (rssi >= -67) return { label: 'Good', bars: 3 }
  if (rssi >= -75) return { label: 'Fair', bars: 2 }
  if (rssi >= -85) return { label: 'Weak', bars: 1 }
  return { label: 'Very weak', bars: 0 }
}

type Row = { key: string; label: string; value: string; meter?: number; bars?: { on: boolean; height: number }[] }

export const frameStatus: BuiltinScreen = {
  name: 'frame-status',
  description: "The frame's own status: battery, online, last seen, firmware and Wi-Fi signal.",
  template,
  css,
  source: 'none',
  prepare({ variables, now, timeZone, device }) {
    const zone = zoneVar(variables, timeZone)
    const locale = localeVar(variables)
    const rows: Row[] = []
    const battery = device?.batteryPercent
    if (typeof battery === 'number' && Number.isFinite(battery)) {
      const percent = Math.max(0, Math.min(100, Math.round(battery)))
      rows.push({ key: 'battery', label: 'Battery', value: `${percent}%`, meter: Math.max(1, percent) })
    } else {
      rows.push({ key: 'battery', label: 'Battery', value: 'Unknown' })
    }
    const lastSeen = device?.lastSeenAt ? DateTime.fromISO(device.lastSeenAt, { zone }) : undefined
    if (lastSeen?.isValid) {
      const relative = lastSeen.setLocale(locale).toRelative({ base: DateTime.fromJSDate(now, { zone }) }) ?? ''
      const absolute = lastSeen.setLocale(locale).toLocaleString(DateTime.DATETIME_MED)
      rows.push({ key: 'lastSeen', label: 'Last seen', value: `${relative} (${absolute})` })
    } else {
      rows.push({ key: 'lastSeen', label: 'Last seen', value: 'Never' })
    }
    rows.push({ key: 'firmware', label: 'Firmware', value: device?.firmwareVersion ?? 'Unknown' })
    const rssi = device?.wifiRssi
    if (typeof rssi === 'number' && Number.isFinite(rssi)) {
      const quality = wifiQuality(rssi)
      const bars = [25, 50, 75, 100].map((height, i) => ({ on: i < quality.bars, height }))
      rows.push({ key: 'wifi', label: 'Wi-Fi signal', value: `${quality.label} (${Math.round(rssi)} dBm)`, bars })
    } else {
      rows.push({ key: 'wifi', label: 'Wi-Fi signal', value: 'Unknown' })
    }
    rows.push({ key: 'display', label: 'Display', value: device ? `${device.width} × ${device.height}` : 'Unknown' })
    const size = sizesFor(device)
    return {
      name: stringVar(variables, 'title', device?.name ?? 'Frame'),
      online: device?.online,
      onlineLabel: device?.online === true ? 'Online' : device?.online === false ? 'Offline' : 'Status unknown',
      rows,
      size,
      meterWidth: Math.round(size.xl * 1.6),
      barWidth: Math.max(4, Math.round(size.s / 2)),
    }
  },
}
