// How the fleet scenario lays N devices over service instances and load generators, each process
// holding at most SOCKETS_PER_PROCESS sockets (this machine allows 20,000 open files per process).
import t from 'tap'
import { dealtTo, planFleet, SOCKETS_PER_PROCESS, split } from '../../bench/lib/fleet-plan.js'

t.test('enough processes that none holds more than its share of sockets, and a cluster of at least two', async (t) => {
  t.same(planFleet(2000), { devices: 2000, instances: 2, workers: 1 })
  t.same(planFleet(100_000), { devices: 100_000, instances: 6, workers: 6 })
  t.same(planFleet(SOCKETS_PER_PROCESS * 2), { devices: SOCKETS_PER_PROCESS * 2, instances: 2, workers: 2 })
  t.same(planFleet(SOCKETS_PER_PROCESS * 2 + 1).instances, 3)
  for (const devices of [1, 999, 18_001, 54_321, 100_000]) {
    const p = planFleet(devices)
    for (let j = 0; j < p.instances; j++) t.ok(dealtTo(devices, p.instances, j) <= SOCKETS_PER_PROCESS, `${devices}: instance ${j}`)
    for (const part of split(Array.from({ length: devices }), p.workers)) t.ok(part.length <= SOCKETS_PER_PROCESS, `${devices}: a worker`)
  }
})

t.test('a chosen number of instances is kept unless it cannot hold the fleet', async (t) => {
  t.same(planFleet(2000, { instances: 1 }), { devices: 2000, instances: 1, workers: 1 })
  t.same(planFleet(2000, { instances: 4 }).instances, 4)
  t.throws(() => planFleet(100_000, { instances: 4 }), /6 needed/)
  t.throws(() => planFleet(0), /positive integer/)
})

t.test('split keeps order and every item, parts differing by at most one', async (t) => {
  const xs = Array.from({ length: 10 }, (_, i) => i)
  const parts = split(xs, 3)
  t.same(parts, [
    [0, 1, 2, 3],
    [4, 5, 6],
    [7, 8, 9],
  ])
  t.same(split([1, 2], 3), [[1], [2], []])
  t.same(
    [0, 1, 2].map((j) => dealtTo(10, 3, j)),
    [4, 3, 3],
  )
})
