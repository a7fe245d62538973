package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"reflect"

	"modernc.org/sqlite"
)

// maxCachedStatements bounds each connection's cache. tollgate's queries are a fixed set of
// a few dozen; the bound only keeps a stream of distinct statements from growing it.
const maxCachedStatements = 256

// sqliteConnector opens SQLite connections that keep their statements compiled. SQLite
// compiles every statement it is given, and database/sql hands the driver the text each
// time: compiling the same few dozen queries again and again was a fifth of webhook
// ingestion's CPU, all of it under the single writer's lock (docs/performance.md).
type sqliteConnector struct {
	dsn    string
	driver *sqlite.Driver
}

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.driver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(sqliteDriverConn)
	if !ok {
		conn.Close()
		return nil, errors.New("sqlite: the driver's connection lacks a context method this cache needs")
	}
	return &cachingConn{sqliteDriverConn: inner, statements: map[string]*cachedStatement{}}, nil
}

func (c sqliteConnector) Driver() driver.Driver { return c.driver }

// sqliteDriverConn is what modernc's connection provides and cachingConn passes through.
type sqliteDriverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachingConn runs statements that take arguments (the application's queries, as opposed
// to DDL, savepoints and the like) through statements compiled once per connection.
// database/sql uses a connection from one goroutine at a time, so the cache needs no lock.
type cachingConn struct {
	sqliteDriverConn
	statements map[string]*cachedStatement
}

// cachedStatement is a compiled statement; open while rows it returned are being read.
type cachedStatement struct {
	stmt interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
	open bool
}

// statement is query's compiled statement, if it can be used now: not while rows of an
// earlier run of it are still open.
func (c *cachingConn) statement(ctx context.Context, query string, args []driver.NamedValue) *cachedStatement {
	if len(args) == 0 {
		return nil
	}
	if s, ok := c.statements[query]; ok {
		if s.open {
			return nil
		}
		return s
	}
	if len(c.statements) >= maxCachedStatements {
		return nil
	}
	prepared, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil // the uncached path reports the error
	}
	stmt, ok := prepared.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	})
	if !ok {
		prepared.Close()
		return nil
	}
	s := &cachedStatement{stmt: stmt}
	c.statements[query] = s
	return s
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if s := c.statement(ctx, query, args); s != nil {
		return s.stmt.ExecContext(ctx, args)
	}
	return c.sqliteDriverConn.ExecContext(ctx, query, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s := c.statement(ctx, query, args)
	if s == nil {
		return c.sqliteDriverConn.QueryContext(ctx, query, args)
	}
	rows, err := s.stmt.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	s.open = true
	return &cachedRows{Rows: rows, statement: s}, nil
}

func (c *cachingConn) Close() error {
	for query, s := range c.statements {
		s.stmt.Close()
		delete(c.statements, query)
	}
	return c.sqliteDriverConn.Close()
}

// cachedRows frees its statement for the next run when closed, and passes on what the
// driver's rows say of their columns.
type cachedRows struct {
	driver.Rows
	statement *cachedStatement
}

func (r *cachedRows) Close() error {
	r.statement.open = false
	return r.Rows.Close()
}

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (r *cachedRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypeLength(i int) (length int64, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (precision, scale int64, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}
