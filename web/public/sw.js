// The console's service worker: shows the service's web push messages ({kind, title, body, url})
// and opens the console (or the message's link on this site) when one is clicked.
self.addEventListener('push', (event) => {
  let message = { title: 'Display Pairing', body: '' }
  try {
    message = { ...message, ...event.data.json() }
  } catch {
    if (event.data) message.body = event.data.text()
  }
  event.waitUntil(
    self.registration.showNotification(message.title, {
      body: message.body,
      icon: '/favicon.svg',
      tag: message.kind || undefined,
      data: { url: message.url || '/' },
    }),
  )
})

self.addEventListener('notificationclick', (event) => {
  event.notification.close()
  const target = new URL(event.notification.data?.url || '/', self.location.origin)
  // Only pages of this site: a message cannot send the user elsewhere.
  const url = target.origin === self.location.origin ? target.href : self.location.origin
  event.waitUntil(
    self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then((windows) => {
      for (const w of windows) if (w.url === url && 'focus' in w) return w.focus()
      return self.clients.openWindow(url)
    }),
  )
})
