package tpcb

import (
	"errors"
	"strings"
	"testing"
)

func TestCreateTableStatements(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		opts          InitOptions
		serverVersion int
		want          []string
	}{
		// pgbench -i, verbatim.
		{"defaults", InitOptions{}, 15, []string{
			"create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22))",
			"create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)",
			"create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) with (fillfactor=100)",
			"create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100)",
		}},
		// From scale 20000 aids no longer fit comfortably in int.
		{"bigint aids", InitOptions{Scale: 20000, FillFactor: 80, Tablespace: `fast"disk`}, 15, []string{
			`create table pgbench_history(tid int,bid int,aid bigint,delta int,mtime timestamp,filler char(22)) tablespace "fast""disk"`,
			`create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=80) tablespace "fast""disk"`,
			`create table pgbench_accounts(aid bigint not null,bid int,abalance int,filler char(84)) with (fillfactor=80) tablespace "fast""disk"`,
			`create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=80) tablespace "fast""disk"`,
		}},
		// pgbench 15 marks the partitioned parent unlogged too.
		{"unlogged hash partitions on 15", InitOptions{Unlogged: true, Partitions: 2, PartitionMethod: "hash"}, 15, []string{
			"create unlogged table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22))",
			"create unlogged table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)",
			"create unlogged table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) partition by hash (aid)",
			"create unlogged table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100)",
		}},
		// PostgreSQL 18 refuses an unlogged partitioned table.
		{"unlogged range partitions on 18", InitOptions{Unlogged: true, Partitions: 2}, 18, []string{
			"create unlogged table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22))",
			"create unlogged table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)",
			"create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) partition by range (aid)",
			"create unlogged table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100)",
		}},
	}
	for _, tt := range tests {
		got := createTableStatements(tt.opts.withDefaults(), tt.serverVersion)
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s:\ngot\n  %s\nwant\n  %s", tt.name, strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
		}
	}
}

func TestCreatePartitionStatements(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts InitOptions
		want []string
	}{
		// 300000 aids in 3 parts of ceil(300000/3) = 100000.
		{"range", InitOptions{Scale: 3, Partitions: 3}, []string{
			"create table pgbench_accounts_1\n  partition of pgbench_accounts\n  for values from (minvalue) to (100001) with (fillfactor=100)",
			"create table pgbench_accounts_2\n  partition of pgbench_accounts\n  for values from (100001) to (200001) with (fillfactor=100)",
			"create table pgbench_accounts_3\n  partition of pgbench_accounts\n  for values from (200001) to (maxvalue) with (fillfactor=100)",
		}},
		// A single range partition is open at both ends.
		{"one range", InitOptions{Partitions: 1, FillFactor: 50}, []string{
			"create table pgbench_accounts_1\n  partition of pgbench_accounts\n  for values from (minvalue) to (maxvalue) with (fillfactor=50)",
		}},
		{"hash unlogged", InitOptions{Partitions: 2, PartitionMethod: "hash", Unlogged: true}, []string{
			"create unlogged table pgbench_accounts_1\n  partition of pgbench_accounts\n  for values with (modulus 2, remainder 0) with (fillfactor=100)",
			"create unlogged table pgbench_accounts_2\n  partition of pgbench_accounts\n  for values with (modulus 2, remainder 1) with (fillfactor=100)",
		}},
	}
	for _, tt := range tests {
		got := createPartitionStatements(tt.opts.withDefaults())
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s:\ngot\n  %s\nwant\n  %s", tt.name, strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
		}
	}
}

func TestPrimaryKeyStatementsIndexTablespace(t *testing.T) {
	t.Parallel()
	got := primaryKeyStatements(InitOptions{IndexTablespace: "idx"})
	want := "alter table pgbench_accounts add primary key (aid) using index tablespace \"idx\""
	if got[2] != want {
		t.Errorf("got %q, want %q", got[2], want)
	}
}

func TestCheckSteps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		steps   string
		badStep rune // 0 = valid
	}{
		{"dtgvp", 0},
		{"dtGvpf", 0},
		{" d t g ", 0}, // pgbench ignores spaces
		{"dtgvpx", 'x'},
		{"DT", 'D'}, // letters are case-sensitive: G is not g
		{"dté", 'é'},
	}
	for _, tt := range tests {
		err := CheckSteps(tt.steps)
		if tt.badStep == 0 {
			if err != nil {
				t.Errorf("CheckSteps(%q) = %v", tt.steps, err)
			}
			continue
		}
		var stepErr *StepError
		if !errors.As(err, &stepErr) || stepErr.Step != tt.badStep {
			t.Errorf("CheckSteps(%q) = %v, want a StepError for %q", tt.steps, err, tt.badStep)
		}
	}
	if err := CheckSteps(""); err == nil || err.Error() != "no initialization steps specified" {
		t.Errorf("CheckSteps(\"\") = %v", err)
	}
}

func TestEveryStepLetterHasAStep(t *testing.T) {
	t.Parallel()
	for _, letter := range AllSteps {
		if _, ok := initSteps[letter]; !ok {
			t.Errorf("step %q is allowed but does nothing", letter)
		}
	}
	if len(initSteps) != len(AllSteps) {
		t.Errorf("%d steps for %d letters", len(initSteps), len(AllSteps))
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	err := InitOptions{Scale: -1, FillFactor: 101, Steps: "q", Partitions: -2, PartitionMethod: "list"}.Validate()
	if err == nil {
		t.Fatal("Validate accepted bad options")
	}
	for _, want := range []string{"-s/--scale", "-F/--fillfactor", `step "q"`, "--partitions must", `got: "list"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error lacks %q:\n%v", want, err)
		}
	}
	if err := (InitOptions{}).Validate(); err != nil {
		t.Errorf("zero options: %v", err)
	}
}

func TestWithDefaultsAddsForeignKeysStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		opts InitOptions
		want string
	}{
		{InitOptions{ForeignKeys: true}, "dtgvpf"},
		{InitOptions{ForeignKeys: true, Steps: "dtfg"}, "dtfg"}, // already there: not added twice
		{InitOptions{Steps: "dtG"}, "dtG"},
	}
	for _, tt := range tests {
		if got := tt.opts.withDefaults().Steps; got != tt.want {
			t.Errorf("%+v: steps %q, want %q", tt.opts, got, tt.want)
		}
	}
}
