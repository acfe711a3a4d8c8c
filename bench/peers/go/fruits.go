// SPDX-License-Identifier: MIT

package main

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	listQuery   = "SELECT id, name FROM fruits WHERE id > $1 ORDER BY id LIMIT $2"
	getQuery    = "SELECT id, name FROM fruits WHERE id = $1"
	insertQuery = "INSERT INTO fruits (name) VALUES ($1) RETURNING id, name"
	updateQuery = "UPDATE fruits SET name = $2 WHERE id = $1 RETURNING id, name"
	deleteQuery = "DELETE FROM fruits WHERE id = $1"
	badLimit    = "limit: must be an integer from 1 to 1000"
	badAfter    = "after: must be an integer from 0 to 2147483647"
	noFruit     = "no fruit with that id"
)

type fruits struct{ pool *pgxpool.Pool }

// send answers body with a Content-Length: net/http would switch to chunked encoding above 2 KiB.
func send(c *gin.Context, status int, body []byte) {
	c.Header("Content-Length", strconv.Itoa(len(body)))
	c.Data(status, "application/json", body)
}

// fail answers preon's error object; a 503 says when to retry.
func fail(c *gin.Context, status int, msg string) {
	if status == http.StatusServiceUnavailable {
		c.Header("Retry-After", "1")
	}
	send(c, status, appendError(nil, status, msg))
}

// dbFail answers a database error as preon does: 409 for a constraint (SQLSTATE class 23), 503 for a
// serialization failure, a deadlock or no connection, else 502 with the database's message.
func dbFail(c *gin.Context, err error) {
	var pgErr *pgconn.PgError
	switch {
	case !errors.As(err, &pgErr):
		fail(c, http.StatusServiceUnavailable, err.Error())
	case pgErr.Code[:2] == "23":
		fail(c, http.StatusConflict, pgErr.Message)
	case pgErr.Code == "40001" || pgErr.Code == "40P01":
		fail(c, http.StatusServiceUnavailable, pgErr.Message)
	default:
		fail(c, http.StatusBadGateway, pgErr.Message)
	}
}

// queryInt reads an optional integer parameter in [min, max]; ok is false when present and not one.
func queryInt(c *gin.Context, key string, def, min, max int) (int, bool) {
	v, present := c.GetQuery(key)
	if !present {
		return def, true
	}
	if len(v) == 0 || len(v) > 10 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		n = n*10 + int(v[i]-'0')
	}
	return n, n >= min && n <= max
}

func (f *fruits) list(c *gin.Context) {
	limit, ok := queryInt(c, "limit", 100, 1, 1000)
	if !ok {
		fail(c, http.StatusBadRequest, badLimit)
		return
	}
	after, ok := queryInt(c, "after", 0, 0, 2147483647)
	if !ok {
		fail(c, http.StatusBadRequest, badAfter)
		return
	}
	rows, err := f.pool.Query(c.Request.Context(), listQuery, after, limit)
	if err != nil {
		dbFail(c, err)
		return
	}
	defer rows.Close()
	out := append(make([]byte, 0, 256), '[')
	n, last := 0, int64(0)
	for rows.Next() {
		var name string
		if err := rows.Scan(&last, &name); err != nil {
			dbFail(c, err)
			return
		}
		if n++; n > 1 {
			out = append(out, ',')
		}
		out = appendFruit(out, last, name)
	}
	if err := rows.Err(); err != nil {
		dbFail(c, err)
		return
	}
	if n == limit {
		c.Header("Link", "</fruits?after="+strconv.FormatInt(last, 10)+"&limit="+strconv.Itoa(limit)+">; rel=\"next\"")
	}
	send(c, http.StatusOK, append(out, ']'))
}

// one runs a statement that returns at most one fruit and answers it with status (404 when none).
func (f *fruits) one(c *gin.Context, status int, sql string, args ...any) (int64, bool) {
	var id int64
	var name string
	err := f.pool.QueryRow(c.Request.Context(), sql, args...).Scan(&id, &name)
	if errors.Is(err, pgx.ErrNoRows) {
		fail(c, http.StatusNotFound, noFruit)
		return 0, false
	}
	if err != nil {
		dbFail(c, err)
		return 0, false
	}
	if status == http.StatusCreated {
		c.Header("Location", "/fruits/"+strconv.FormatInt(id, 10))
	}
	send(c, status, appendFruit(nil, id, name))
	return id, true
}

func (f *fruits) get(c *gin.Context) {
	if id, ok := pathID(c); ok {
		f.one(c, http.StatusOK, getQuery, id)
	}
}

func (f *fruits) create(c *gin.Context) {
	if name, ok := bodyName(c); ok {
		f.one(c, http.StatusCreated, insertQuery, name)
	}
}

func (f *fruits) update(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	if name, ok := bodyName(c); ok {
		f.one(c, http.StatusOK, updateQuery, id, name)
	}
}

func (f *fruits) delete(c *gin.Context) {
	id, ok := pathID(c)
	if !ok {
		return
	}
	tag, err := f.pool.Exec(c.Request.Context(), deleteQuery, id)
	switch {
	case err != nil:
		dbFail(c, err)
	case tag.RowsAffected() == 0:
		fail(c, http.StatusNotFound, noFruit)
	default:
		c.Status(http.StatusNoContent)
	}
}
