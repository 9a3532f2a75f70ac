// The page an invitation e-mail links to. Rendered on the server from the invitation and the
// caller's session cookie; its buttons call the JSON API (sign-in, magic link, accept).
import type { Caller } from '../auth/guard.js'
import type { InvitationDetails } from './repository.js'
import type { InvitationState } from './service.js'

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
/** JSON inside a <script>: no sequence in it can close the script element. */
const scriptJson = (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c')

const shell = (title: string, body: string, script = '') => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:30rem;margin:3rem auto;padding:0 1rem;line-height:1.4}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;font-size:1rem;box-sizing:border-box}button{margin:1rem .5rem 0 0;padding:.5rem 1rem;font-size:1rem}#out{margin-top:1rem;white-space:pre-wrap}.muted{color:#555}</style>
</head><body>
${body}
<div id="out" role="status"></div>
${script ? `<script>${script}</script>` : ''}
</body></html>`

const stateText: Record<Exclude<InvitationState, 'pending'>, string> = {
  expired: 'This invitation has expired. Ask the person who invited you for a new one.',
  accepted: 'This invitation has already been accepted.',
  rejected: 'This invitation was declined.',
  canceled: 'This invitation was withdrawn.',
  unknown: 'This invitation can no longer be used.',
}

export function notFoundPage(): string {
  return shell('Invitation not found', '<h1>Invitation not found</h1><p>The link is wrong or the invitation was removed.</p>')
}

export function closedPage(inv: InvitationDetails, state: Exclude<InvitationState, 'pending'>): string {
  return shell('Invitation', `<h1>${escapeHtml(inv.organizationName)}</h1><p>${stateText[state]}</p>`)
}

export function invitationPage(inv: InvitationDetails, who: Caller | null): string {
  const org = escapeHtml(inv.organizationName)
  const intro = `<h1>Join ${org}</h1>
<p>${inv.inviterName ? `${escapeHtml(inv.inviterName)} invited` : 'You are invited'} <strong>${escapeHtml(inv.email)}</strong> to join <strong>${org}</strong>${inv.role ? ` as ${escapeHtml(inv.role)}` : ''}.</p>
<p class="muted">The invitation is valid until ${escapeHtml(inv.expiresAt.toUTCString())}.</p>`
  const data = scriptJson({ invitationId: inv.id, email: inv.email, path: `/accept-invitation/${inv.id}` })
  const common = `const D=${data};const out=document.getElementById('out');
async function call(path,body){const r=await fetch(path,{method:'POST',credentials:'include',headers:{'content-type':'application/json'},body:JSON.stringify(body)});const j=await r.json().catch(()=>({}));return{ok:r.ok,status:r.status,j}}
const show=(r,okText)=>{out.textContent=r.ok?okText:'Error '+r.status+': '+(r.j.message||'')};
const on=(id,fn)=>{const el=document.getElementById(id);if(el)el.onclick=fn};
on('link',async()=>show(await call('/api/auth/sign-in/magic-link',{email:D.email,callbackURL:D.path}),'A sign-in link was sent to '+D.email+'. Open it to come back here signed in.'));
on('out-btn',async()=>{await call('/api/auth/sign-out',{});location.reload()});`

  if (!who) {
    return shell(
      `Join ${inv.organizationName}`,
      `${intro}
<p>Sign in as ${escapeHtml(inv.email)} to accept. No account yet? The e-mailed link creates one.</p>
<button id="link" type="button">E-mail me a sign-in link</button>
<form id="f"><label for="pw">Or sign in with your password</label><input id="pw" type="password" autocomplete="current-password" required><button type="submit">Sign in</button></form>`,
      `${common}
document.getElementById('f').onsubmit=async(e)=>{e.preventDefault();const r=await call('/api/auth/sign-in/email',{email:D.email,password:document.getElementById('pw').value});if(r.ok)location.reload();else show(r,'')};`,
    )
  }
  if (who.user.email.toLowerCase() !== inv.email.toLowerCase()) {
    return shell(
      `Join ${inv.organizationName}`,
      `${intro}<p>You are signed in as ${escapeHtml(who.user.email)}, but the invitation is for ${escapeHtml(inv.email)}.</p><button id="out-btn" type="button">Sign out</button>`,
      common,
    )
  }
  if (!who.user.emailVerified) {
    return shell(
      `Join ${inv.organizationName}`,
      `${intro}<p>Your e-mail address is not verified yet. Open the sign-in link we e-mail you to verify it, then accept.</p><button id="link" type="button">E-mail me a sign-in link</button>`,
      common,
    )
  }
  return shell(
    `Join ${inv.organizationName}`,
    `${intro}<p>Signed in as ${escapeHtml(who.user.email)}.</p><button id="accept" type="button">Accept invitation</button>`,
    `${common}
on('accept',async()=>{const r=await call('/api/invitations/accept',{invitationId:D.invitationId});show(r,'Welcome to '+(r.j.organization&&r.j.organization.name)+'. You are now a member.');if(r.ok)document.getElementById('accept').disabled=true});`,
  )
}
