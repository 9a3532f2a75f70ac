// GET /device: the verification_uri a device shows. A small page where a signed-in person
// (session cookie) types or confirms the code and names the device; it calls the JSON API.
import type { FastifyInstance } from 'fastify'

const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Pair a display</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;font-size:1rem}button{margin-top:1rem;padding:.5rem 1rem;font-size:1rem}#out{margin-top:1rem;white-space:pre-wrap}</style>
</head><body>
<h1>Pair a display</h1>
<p>Sign in to this service in this browser first. Then enter the code your display shows.</p>
<form id="f">
<label for="code">Code</label><input id="code" name="code" autocomplete="off" placeholder="XXXX-XXXX">
<label for="name">Name for the display</label><input id="name" name="name" value="My display" maxlength="64">
<button type="submit">Pair</button> <button type="button" id="deny">Deny</button>
</form>
<div id="out" role="status"></div>
<script>
const q = new URLSearchParams(location.search); const uc = q.get('user_code');
const code = document.getElementById('code'); if (uc) { code.value = uc; }
const body = () => { const v = code.value.trim(); return /^[0-9a-f-]{36}$/i.test(v) ? { userCode: v } : { pinCode: v } };
async function send(path, extra) {
  const r = await fetch(path, { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body(), ...extra }) });
  const j = await r.json().catch(() => ({}));
  document.getElementById('out').textContent = r.ok ? 'Done: ' + (j.status || 'ok') : 'Error ' + r.status + ': ' + (j.message || '');
}
document.getElementById('f').onsubmit = (e) => { e.preventDefault(); send('/api/device/validate', { name: document.getElementById('name').value }) };
document.getElementById('deny').onclick = () => send('/api/device/deny', {});
</script></body></html>`

export async function verificationPage(app: FastifyInstance) {
  app.get(
    '/device',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['device module'],
        summary: 'Page where a person enters a device code',
        response: { 200: { type: 'string', description: 'text/html' } },
      },
    },
    async (_req, reply) => reply.type('text/html; charset=utf-8').send(page),
  )
}
