//! The DDL each engine gets for seed 1, pinned in `fixtures/database/ddl-seed-1.<engine>.sql` so a
//! reviewer can read it (`AGENTRANK_BLESS=1` rewrites the files); the rendering is deterministic and the
//! seed changes the table names.

use std::path::Path;

use agentrank_catalog::dataset::{Dataset, sql};
use agentrank_schema::task::Engine;

#[test]
fn ddl_per_engine_matches_the_pinned_files() {
    let d = Dataset::generate(1);
    for engine in Engine::ALL {
        let ddl: String = d
            .tables
            .iter()
            .map(|t| sql::create_table(engine, t))
            .collect::<Vec<_>>()
            .join("\n");
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../fixtures/database/ddl-seed-1.{}.sql",
            engine.as_str()
        ));
        if std::env::var_os("AGENTRANK_BLESS").is_some() {
            std::fs::write(&path, &ddl).expect("write");
        }
        let pinned = std::fs::read_to_string(&path).expect("pinned DDL exists");
        assert_eq!(ddl, pinned, "{}", engine.as_str());
    }
    assert_ne!(Dataset::generate(2).table_names(), d.table_names());
    assert_eq!(
        sql::dataset_sha256(&Dataset::generate(1)),
        sql::dataset_sha256(&d)
    );
}
