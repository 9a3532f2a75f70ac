// Revocations a user makes (sign-out, revoke-session; change-password has a file of its own):
// see test/helpers/revocation-race.ts.
import t from 'tap'
import { raceRevocations } from '../helpers/revocation-race.js'

t.test('no request that starts after a user revoked a session is served', (t) => raceRevocations(t, ['sign-out', 'revoke-session']))
