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
// dynalite throws from a request's 'error' handler, so a client that drops its connection
// mid-request (a paused or killed candidate's HTTP client timing out) takes the whole server
// down. Real DynamoDB shrugs that off; a crash here would be the emulator's failure, not the
// recipe's, and ends the run as unknown. Only that one error is absorbed.
process.on('uncaughtException', (err) => {
  if (err && err.code === 'ECONNRESET' && err.message === 'aborted') {
    console.log(`client aborted a request (${err.message}); dynalite would have exited`)
    return
  }
  console.error(err)
  process.exit(1)
})
