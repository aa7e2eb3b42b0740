//! A column that became nullable (`tool_calls.tool_listed`: null now means "no listing to judge
//! against") still reads files that wrote it as required; the reverse is refused.

use agentrank_schema::records::ToolCallRecord;
use agentrank_schema::table::{Table, check_schema};
use arrow_schema::{Field, Schema};

fn with_tool_listed(nullable: bool, expected: &[Field]) -> Schema {
    Schema::new(
        expected
            .iter()
            .map(|f| {
                if f.name() == "tool_listed" {
                    f.clone().with_nullable(nullable)
                } else {
                    f.clone()
                }
            })
            .collect::<Vec<_>>(),
    )
}

#[test]
fn a_required_column_in_a_file_reads_into_a_nullable_field() {
    let expected = ToolCallRecord::fields();
    assert!(
        expected
            .iter()
            .any(|f| f.name() == "tool_listed" && f.is_nullable())
    );
    let old = with_tool_listed(false, &expected);
    check_schema::<ToolCallRecord>(&old, false).expect("a file that wrote tool_listed as required");
    check_schema::<ToolCallRecord>(&old, true).expect("also as an older minor");
    // A nullable column where a required one is expected would let nulls into a required field.
    let mut fields: Vec<Field> = expected.clone();
    for f in &mut fields {
        if f.name() == "seq" {
            *f = f.clone().with_nullable(true);
        }
    }
    let Err(err) = check_schema::<ToolCallRecord>(&Schema::new(fields), false) else {
        panic!("a nullable `seq` is refused");
    };
    assert!(err.to_string().contains("`seq`"), "{err}");
}
