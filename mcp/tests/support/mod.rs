//! What the MCP client's and the tap's tests share: the purpose-built misbehaving server as a launch,
//! client options with short deadlines, a runtime. The runner's tests include this file too (its
//! agents and `tap` command start the same server).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use agentrank_mcp::{ClientOptions, ResolvedLaunch};

#[allow(unused_imports)] // each test binary uses a part
pub use agentrank_test_support::proc::{alive, children_of};

/// The misbehaving server (`test-support/misbehaving_server.py`) in one of its modes.
pub fn misbehaving(mode: &str) -> ResolvedLaunch {
    let (program, args) = agentrank_test_support::misbehaving_server(mode);
    let mut env = BTreeMap::new();
    env.insert(
        "PATH".to_string(),
        "/usr/local/bin:/usr/bin:/bin".to_string(),
    );
    env.insert("LANG".to_string(), "C.UTF-8".to_string());
    ResolvedLaunch {
        program,
        args,
        env,
        cwd: None,
    }
}

/// Client options with short deadlines for fault tests.
pub fn quick_options() -> ClientOptions {
    ClientOptions {
        init_timeout: Duration::from_secs(20),
        request_timeout: Duration::from_secs(3),
        page_cap: 7,
        stop_grace: Duration::from_millis(500),
        ..ClientOptions::default()
    }
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}
