// What a notification is, apart from the notifier (service.ts) that sends it, so the modules that
// compose messages (presence-digest.ts) need not import the notifier that imports them.
export type NotificationKind = 'generation' | 'device-presence' | 'battery-low' | 'device-silent' | 'firmware-failed' | 'message'
export type NotificationMessage = { title: string; body: string; url?: string }
