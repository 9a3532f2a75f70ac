// The part of u8-mqtt's browser client (MQTT 3.1.1 over WebSocket) the console uses; the package
// ships JavaScript only.
declare module 'u8-mqtt/esm/web/v4.js' {
  export type PublishPacket = { topic: string; payload: Uint8Array; qos: number; retain?: boolean }
  export type ConnectPacket = {
    client_id?: string
    username?: string
    password?: Uint8Array
    keep_alive?: number
    flags?: { clean_start?: boolean }
  }
  export interface MqttClient {
    connect(pkt: ConnectPacket): Promise<unknown>
    disconnect(): Promise<unknown>
    subscribe(topics: string[]): Promise<unknown>
    unsubscribe(topics: string[]): Promise<unknown>
    on_topic(route: string, handler: (pkt: PublishPacket, params: Record<string, string>) => unknown): MqttClient
    with_websock(socket: WebSocket): MqttClient
  }
  export type Hooks = {
    on_live?: (client: MqttClient, isReconnect: boolean) => unknown
    on_disconnect?: (client: MqttClient, intentional: boolean, err?: Error) => unknown
    on_error?: (err: unknown, event: string) => void
    log_conn?: (event: string, ...args: unknown[]) => void
  }
  const mqtt: (hooks?: Hooks) => MqttClient
  export default mqtt
}
