// SPDX-License-Identifier: MIT

// The Go service of the published Go-vs-Quarkus comparison, on PostgreSQL: gin routes, a pgx v4 pool.
//
//	GET /hello  -> 200 "Hello", text/plain;charset=UTF-8
//	GET /fruits -> 200 every row of fruits ordered by id, [{"id":1,"name":"Kiwi"},...], application/json
//	               a database error -> 500
//
// Environment: PORT (8080), LISTEN (the address to listen on, 127.0.0.1), DATABASE_URL (a libpq URI),
// POOL_SIZE (10).
// SIGTERM stops accepting, lets requests in flight finish (up to 10 s), closes the pool and exits 0.
package main

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v4/pgxpool"
)

const listQuery = "SELECT id, name FROM fruits ORDER BY id"

func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// openPool fills a pool of size connections at start, as HikariCP and preon do. When the database cannot be
// reached yet, the service still starts (/hello answers) and the pool connects on first use.
func openPool(url string, size int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(size)
	cfg.MinConns = int32(size)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.ConnectConfig(ctx, cfg)
	if err == nil {
		return pool, nil
	}
	log.Printf("database not reachable at start (%v): connecting on first use", err)
	cfg.LazyConnect = true
	return pgxpool.ConnectConfig(context.Background(), cfg)
}

// listFruits writes the table as preon writes it (jansson, compact), so both answer the same bytes.
func listFruits(ctx context.Context, pool *pgxpool.Pool) ([]byte, error) {
	rows, err := pool.Query(ctx, listQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]byte, 0, 256)
	out = append(out, '[')
	for n := 0; rows.Next(); n++ {
		var id int64
		var name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"id":`...)
		out = strconv.AppendInt(out, id, 10)
		out = append(out, `,"name":`...)
		out = appendJSONString(out, name)
		out = append(out, '}')
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return append(out, ']'), nil
}

func newRouter(pool *pgxpool.Pool) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New() // no access log, as preon's default
	r.Use(gin.Recovery())
	hello := []byte("Hello")
	r.GET("/hello", func(c *gin.Context) {
		c.Data(http.StatusOK, "text/plain;charset=UTF-8", hello)
	})
	r.GET("/fruits", func(c *gin.Context) {
		body, err := listFruits(c.Request.Context(), pool)
		if err != nil {
			c.Data(http.StatusInternalServerError, "text/plain;charset=UTF-8", []byte("database error: "+err.Error()))
			return
		}
		// net/http would switch to chunked encoding above 2 KiB; preon always sends a length.
		c.Header("Content-Length", strconv.Itoa(len(body)))
		c.Data(http.StatusOK, "application/json", body)
	})
	return r
}

func main() {
	port := getenv("PORT", "8080")
	addr := net.JoinHostPort(strings.Trim(getenv("LISTEN", "127.0.0.1"), "[]"), port)
	size, err := strconv.Atoi(getenv("POOL_SIZE", "10"))
	if err != nil || size < 1 {
		log.Fatalf("POOL_SIZE must be a positive integer, not %q", os.Getenv("POOL_SIZE"))
	}
	pool, err := openPool(getenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:25432/preon"), size)
	if err != nil {
		log.Fatalf("DATABASE_URL: %v", err)
	}
	srv := &http.Server{Addr: addr, Handler: newRouter(pool)}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		drain, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(drain)
	}()
	log.Printf("go peer (gin, pgx pool of %d) listening on %s", size, addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	pool.Close()
	log.Printf("stopped")
}
