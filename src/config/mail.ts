// Outgoing e-mail: SMTP, or files in DATA_DIR/outbox.
import { z } from 'zod'
import { type Section, optionalUrl, variable } from './variables.js'

export const mail = {
  title: 'Mail',
  variables: {
    smtpUrl: variable('SMTP_URL', optionalUrl, 'e.g. `smtp://user:pass@host:587`; without it e-mail goes to `DATA_DIR/outbox`'),
    mailFrom: variable('MAIL_FROM', z.string().default('Display Pairing <no-reply@localhost>'), 'sender'),
  },
} satisfies Section
