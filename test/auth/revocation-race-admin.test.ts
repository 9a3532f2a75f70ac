// Revocations an admin makes (ban, remove-user): see test/helpers/revocation-race.ts.
import t from 'tap'
import { raceRevocations } from '../helpers/revocation-race.js'

t.test('no request that starts after an admin banned or removed the user is served', (t) => raceRevocations(t, ['ban', 'remove-user']))
