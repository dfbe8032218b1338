// Package boltstore is slackgate's embedded store, for one process on one machine.
//
// It keeps one bbolt file, with bbolt transactions for atomicity and
// in-process wake-ups for every blocking call.
//
// It is what `slackgate run` uses without REDIS_URL. The file lock admits one
// process at a time, so it cannot serve separate bot and worker processes or
// several replicas: that is store/redisstore's job. It implements store.Store
// and nothing more; the contract it keeps is store's, checked by
// store/storetest. Records due to expire are swept once a minute, in small
// batches.
package boltstore
