import type { TransactionSql } from "postgres";

/** A table of Outpost's schema (`public`) as the snapshot's catalog describes it. */
export interface CatalogTable {
  name: string;
  columns: string[];
  partitioned: boolean;
  /** Tables it references by foreign key (restored before it). */
  references: string[];
}

/**
 * Every table of schema `public` (partitions are dumped through their parent), with its stored
 * columns (generated ones are computed again on restore), in an order where each table comes after
 * the tables it references.
 */
export async function listTables(tx: TransactionSql): Promise<CatalogTable[]> {
  const rows = await tx<{ name: string; partitioned: boolean; columns: string[]; references: string[] }[]>`
    select c.relname as name, c.relkind = 'p' as partitioned,
      array(select a.attname::text from pg_attribute a
        where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''
        order by a.attnum) as columns,
      array(select distinct r.relname::text from pg_constraint f join pg_class r on r.oid = f.confrelid
        where f.conrelid = c.oid and f.contype = 'f' and f.conparentid = 0 and r.oid <> c.oid) as references
    from pg_class c
    where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
    order by c.relname`;
  return dependencyOrder(rows);
}

/** Tables sorted so that every table follows those it references (names break ties, for stable archives). */
export function dependencyOrder<T extends { name: string; references: string[] }>(tables: T[]): T[] {
  const byName = new Map(tables.map((t) => [t.name, t]));
  const done = new Set<string>();
  const ordered: T[] = [];
  const visit = (table: T, path: string[]) => {
    if (done.has(table.name)) return;
    if (path.includes(table.name))
      throw new Error(`foreign keys form a cycle: ${[...path, table.name].join(" → ")}`);
    for (const name of table.references) {
      const referenced = byName.get(name);
      if (referenced) visit(referenced, [...path, table.name]);
    }
    done.add(table.name);
    ordered.push(table);
  };
  for (const table of tables) visit(table, []);
  return ordered;
}

/** The UTC days of a table partitioned by day (`<table>_pYYYYMMDD`, ./migrations 0003/0023) and its key. */
export async function dailyPartitions(
  tx: TransactionSql,
  table: string,
): Promise<{ key: string; days: string[] }> {
  const [key] = await tx<{ key: string }[]>`
    select a.attname::text as key from pg_partitioned_table p
    join pg_attribute a on a.attrelid = p.partrelid and a.attnum = p.partattrs[0]
    where p.partrelid = ${`public.${table}`}::regclass`;
  const children = await tx<{ name: string }[]>`
    select c.relname::text as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = ${`public.${table}`}::regclass order by c.relname`;
  const pattern = new RegExp(`^${table}_p(\\d{4})(\\d{2})(\\d{2})$`);
  const days = children.flatMap(({ name }) => {
    const match = pattern.exec(name);
    return match ? [`${match[1]}-${match[2]}-${match[3]}`] : [];
  });
  return { key: key!.key, days };
}

/** Every sequence of schema `public` and where it stands. */
export async function sequenceStates(tx: TransactionSql) {
  const names = await tx<{ name: string }[]>`
    select relname::text as name from pg_class
    where relnamespace = 'public'::regnamespace and relkind = 'S' order by relname`;
  const states: { name: string; last_value: string; is_called: boolean }[] = [];
  for (const { name } of names) {
    const [state] = await tx<{ last_value: string; is_called: boolean }[]>`
      select last_value::text, is_called from ${tx(name)}`;
    states.push({ name, ...state! });
  }
  return states;
}
