// A password change that revokes the user's other sessions: see test/helpers/revocation-race.ts.
import t from 'tap'
import { raceRevocations } from '../helpers/revocation-race.js'

t.test('no request that starts after a password change revoked the other sessions is served', (t) =>
  raceRevocations(t, ['change-password']),
)
