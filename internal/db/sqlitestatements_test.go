package db

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

func TestSQLiteStatementsAreCompiledOnceAndStayCorrect(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "cache.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.ExecContext(ctx, "create table t (id integer primary key, name text not null)"); err != nil {
		t.Fatal(err)
	}
	const insert, byID = "insert into t (id, name) values ($1, $2)", "select name from t where id = $1"
	for i, name := range []string{"a", "b", "c"} {
		if _, err := d.ExecContext(ctx, insert, i+1, name); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("each run binds its own arguments", func(t *testing.T) {
		for i, want := range []string{"a", "b", "c", "a"} {
			var got string
			if err := d.QueryRowContext(ctx, byID, i%3+1).Scan(&got); err != nil || got != want {
				t.Errorf("row %d: %q, %v; want %q", i%3+1, got, err, want)
			}
		}
	})

	t.Run("a statement whose rows are open runs again uncached", func(t *testing.T) {
		err := d.InTx(ctx, func(tx *sql.Tx) error {
			const all = "select id, name from t where id >= $1 order by id"
			outer, err := tx.QueryContext(ctx, all, 1)
			if err != nil {
				return err
			}
			defer outer.Close()
			var seen []string
			for outer.Next() {
				var id int
				var name string
				if err := outer.Scan(&id, &name); err != nil {
					return err
				}
				var inner int
				if err := tx.QueryRowContext(ctx, "select count(*) from t where id >= $1", id).Scan(&inner); err != nil {
					return err
				}
				var again string
				if err := tx.QueryRowContext(ctx, all, id).Scan(&again, new(string)); err != nil {
					return err
				}
				seen = append(seen, name+again)
			}
			if got := len(seen); got != 3 || seen[0] != "a1" || seen[2] != "c3" {
				t.Errorf("outer rows read %v, want a1 b2 c3", seen)
			}
			return outer.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a schema change recompiles", func(t *testing.T) {
		if _, err := d.ExecContext(ctx, "alter table t add column note text"); err != nil {
			t.Fatal(err)
		}
		if _, err := d.ExecContext(ctx, insert, 4, "d"); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := d.QueryRowContext(ctx, byID, 4).Scan(&got); err != nil || got != "d" {
			t.Errorf("after the change: %q, %v", got, err)
		}
	})

	t.Run("the cache holds each statement once", func(t *testing.T) {
		conn, err := d.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		err = conn.Raw(func(c any) error {
			cache := c.(*cachingConn).statements
			if _, ok := cache[byID]; !ok {
				t.Errorf("%q is not cached", byID)
			}
			if _, ok := cache["alter table t add column note text"]; ok {
				t.Error("a statement without arguments was cached")
			}
			if len(cache) > 5 {
				t.Errorf("%d statements cached for 5 distinct queries", len(cache))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
