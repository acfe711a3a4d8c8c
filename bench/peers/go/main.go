// SPDX-License-Identifier: MIT

// The Go service of the published Go-vs-Quarkus comparison (post 002), on PostgreSQL: gin routes and a pgx/v5
// pool, answering preon's bytes on
//
//	GET /hello                    -> 200 "Hello", text/plain;charset=UTF-8
//	GET /fruits[?limit=&after=]   -> 200 a page of fruits ordered by id (Link: rel="next" on a full page), 400 on bad paging
//	GET/PUT/DELETE /fruits/{id}, POST /fruits -> the reactive SQL client quickstart's CRUD (201 + Location, 404, 409, 400, 415)
//
// Environment: PORT (8080), LISTEN (the address to listen on, 127.0.0.1), DATABASE_URL (a libpq URI; without it
// PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD), POOL_SIZE (10). SIGTERM stops accepting, lets requests in
// flight finish (up to 10 s), closes the pool and exits 0.
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
	"github.com/jackc/pgx/v5/pgxpool"
)

func getenv(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// openPool makes a pool of size connections, all opened at start as HikariCP and preon do. When the database
// cannot be reached yet, the service still starts (/hello answers) and the pool connects on first use.
func openPool(url string, size int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(size)
	cfg.MinConns = int32(size)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg) // connects lazily, fills MinConns in the background
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pool.Ping(ctx); err != nil {
		log.Printf("database not reachable at start (%v): connecting on first use", err)
	}
	return pool, nil
}

func newRouter(f *fruits) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New() // no access log, as preon's default
	r.Use(gin.Recovery())
	hello := []byte("Hello")
	r.GET("/hello", func(c *gin.Context) {
		c.Data(http.StatusOK, "text/plain;charset=UTF-8", hello)
	})
	r.GET("/fruits", f.list)
	r.POST("/fruits", f.create)
	r.GET("/fruits/:id", f.get)
	r.PUT("/fruits/:id", f.update)
	r.DELETE("/fruits/:id", f.delete)
	return r
}

func main() {
	port := getenv("PORT", "8080")
	addr := net.JoinHostPort(strings.Trim(getenv("LISTEN", "127.0.0.1"), "[]"), port)
	size, err := strconv.Atoi(getenv("POOL_SIZE", "10"))
	if err != nil || size < 1 {
		log.Fatalf("POOL_SIZE must be a positive integer, not %q", os.Getenv("POOL_SIZE"))
	}
	url := os.Getenv("DATABASE_URL")
	if url == "" && os.Getenv("PGHOST") == "" { // "" is libpq's PGHOST, PGPORT, … (an image is given those)
		url = "postgresql://postgres@127.0.0.1:25432/preon"
	}
	pool, err := openPool(url, size)
	if err != nil {
		log.Fatalf("DATABASE_URL: %v", err)
	}
	srv := &http.Server{Addr: addr, Handler: newRouter(&fruits{pool})}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		drain, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(drain)
	}()
	log.Printf("go peer (gin, pgx/v5 pool of %d) listening on %s", size, addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
	pool.Close()
	log.Printf("stopped")
}
