// What a screen's template and a built-in screen's prepare() know about the frame it is drawn
// for. Shared by the renderer (which passes it into the worker) and the built-in screens, so
// both sides agree on one shape without importing each other.

export type ScreenDeviceContext = {
  id: string
  name: string
  width: number
  height: number
  batteryPercent?: number
  lastSeenAt?: string
  online?: boolean
  firmwareVersion?: string
  wifiRssi?: number
}
