// The dynamodb store's server: dynalite (the DynamoDB API on LevelDB, here memdown, so all
// data lives in memory). Tables become ACTIVE at once instead of after 500 ms, and SIGTERM
// and SIGINT end it: node as PID 1 gets no default handler for them.
'use strict'
const dynalite = require('dynalite')
const version = require('dynalite/package.json').version
const port = Number(process.env.DYNAMODB_PORT || 8000)
const server = dynalite({createTableMs: 0, deleteTableMs: 0, updateTableMs: 0})
server.listen(port, () => console.log(`dynalite ${version} (node ${process.version}, in memory) listening on ${port}`))
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0))
