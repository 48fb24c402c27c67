/**
 * Which database failures are the database's outage (503 `database_unavailable`, retry the same
 * request) and which are defects: by SQLSTATE class, whatever reason the driver filed them under.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConnectionError, SqlError, SqlSyntaxError, UniqueViolation, UnknownError } from "effect/sql/SqlError"
import { isConnectionFailure } from "../../src/platform/database.ts"

/** An error as the PostgreSQL driver builds one: the server's fields on the cause. */
const fromServer = (code: string) => Object.assign(new Error(`server said ${code}`), { code })

const unknown = (code: string) => new SqlError({ reason: new UnknownError({ cause: fromServer(code), message: "query failed" }) })

describe("isConnectionFailure", () => {
  for (const code of ["57P01", "57P02", "57P03", "57P04", "57P05", "08000", "08003", "08006", "08P01"]) {
    it(`SQLSTATE ${code} (filed as UnknownError) is the database's outage`, () => {
      assert.isTrue(isConnectionFailure(unknown(code)))
    })
  }

  for (const code of ["ECONNREFUSED", "ECONNRESET", "EPIPE"]) {
    it(`a socket's ${code} is the database's outage`, () => {
      assert.isTrue(isConnectionFailure(unknown(code)))
    })
  }

  it("a lost connection the driver classified is the database's outage", () => {
    assert.isTrue(isConnectionFailure(new SqlError({ reason: new ConnectionError({ cause: new Error("closed") }) })))
  })

  for (const code of ["XX000", "22P02", "57000", "53100", "P0001"]) {
    it(`SQLSTATE ${code} is a defect, not an outage`, () => {
      assert.isFalse(isConnectionFailure(unknown(code)))
    })
  }

  it("a statement the database refused for its content is a defect", () => {
    assert.isFalse(isConnectionFailure(new SqlError({ reason: new UniqueViolation({ cause: fromServer("23505"), constraint: "x" }) })))
    assert.isFalse(isConnectionFailure(new SqlError({ reason: new SqlSyntaxError({ cause: fromServer("42P01") }) })))
  })
})
