//! Bug: a config resource of a type Kafka does not know (`ConfigResource.Type.forId` gives
//! UNKNOWN: any id but 2, 4, 8, 16, 32) failed only its own resource, INVALID_REQUEST
//! "Unsupported resource type N.", in DescribeConfigs and in both alter requests. Kafka's
//! `ConfigHelper.handleDescribeConfigsRequest` throws `InvalidRequestException` for it before
//! describing anything, so the whole DescribeConfigs fails: every resource INVALID_REQUEST with
//! the error's own message and no configs (`DescribeConfigsRequest.getErrorResponse`). The alter
//! requests reach Kafka's controller, which answers that resource alone UNSUPPORTED_VERSION
//! "Unknown resource type N." (`ControllerApis.handleIncrementalAlterConfigs`,
//! `handleLegacyAlterConfigs`) and the others as usual. Known types mirrorlog does not serve
//! (BROKER_LOGGER, CLIENT_METRICS, GROUP) still fail only themselves.

use crate::common;

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{
    AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::handlers::admin::{self, OP_SET, RESOURCE_TOPIC};

const UNKNOWN_TYPE: i8 = 3;
const GROUP: i8 = 32;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn describe(b: &mirrorlog_broker::broker::Broker, resources: &[(i8, &str)]) -> Vec<(i16, usize)> {
    let mut r = DescribeConfigsRequest::default();
    r.resources = resources
        .iter()
        .map(|(t, n)| {
            let mut res = DescribeConfigsResource::default();
            res.resource_type = *t;
            res.resource_name = s(n);
            res
        })
        .collect();
    let resp = admin::describe_configs(b, r, 4);
    assert_eq!(resp.results.len(), resources.len());
    resp.results
        .iter()
        .zip(resources)
        .map(|(out, (t, n))| {
            assert_eq!((out.resource_type, out.resource_name.as_str()), (*t, *n));
            (out.error_code, out.configs.len())
        })
        .collect()
}

#[test]
fn an_unknown_resource_type_fails_the_whole_describe_configs() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    common::configs::create_topic(&b, "t", 1, &[]);

    let known = describe(&b, &[(RESOURCE_TOPIC, "t")]);
    assert_eq!(known[0].0, 0);
    assert!(known[0].1 > 0);

    let out = describe(&b, &[(RESOURCE_TOPIC, "t"), (UNKNOWN_TYPE, "x")]);
    assert_eq!(
        out,
        vec![(E::InvalidRequest.code(), 0), (E::InvalidRequest.code(), 0)]
    );
    // A known type this broker does not serve fails only itself.
    let out = describe(&b, &[(RESOURCE_TOPIC, "t"), (GROUP, "g")]);
    assert_eq!(out[0].0, 0);
    assert!(out[0].1 > 0);
    assert_eq!(out[1], (E::InvalidRequest.code(), 0));
}

/// IncrementalAlterConfigs (v1) and AlterConfigs (v2) of the same resources, each setting
/// `retention.ms`: every resource's (error code, message), one list per request.
fn alter_both(b: &mirrorlog_broker::broker::Broker, resources: &[(i8, &str)]) -> [Outcomes; 2] {
    use kafka_protocol::messages::alter_configs_request as legacy;
    use kafka_protocol::messages::incremental_alter_configs_request as inc;
    let mut r = IncrementalAlterConfigsRequest::default();
    let mut l = AlterConfigsRequest::default();
    for (t, n) in resources {
        let mut c = inc::AlterableConfig::default();
        (c.name, c.config_operation, c.value) = (s("retention.ms"), OP_SET, Some(s("1000")));
        let mut res = inc::AlterConfigsResource::default();
        (res.resource_type, res.resource_name, res.configs) = (*t, s(n), vec![c]);
        r.resources.push(res);
        let mut c = legacy::AlterableConfig::default();
        (c.name, c.value) = (s("retention.ms"), Some(s("2000")));
        let mut res = legacy::AlterConfigsResource::default();
        (res.resource_type, res.resource_name, res.configs) = (*t, s(n), vec![c]);
        l.resources.push(res);
    }
    let msg = |m: &Option<StrBytes>| m.as_ref().map(|m| m.to_string());
    [
        admin::incremental_alter_configs(b, r, 1)
            .responses
            .iter()
            .map(|o| (o.error_code, msg(&o.error_message)))
            .collect(),
        admin::alter_configs(b, l, 2)
            .responses
            .iter()
            .map(|o| (o.error_code, msg(&o.error_message)))
            .collect(),
    ]
}

type Outcomes = Vec<(i16, Option<String>)>;

#[test]
fn an_unknown_resource_type_is_unsupported_version_in_the_alter_requests() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    common::configs::create_topic(&b, "t", 1, &[]);
    let want = (
        E::UnsupportedVersion.code(),
        Some("Unknown resource type 3.".to_string()),
    );
    for got in alter_both(&b, &[(RESOURCE_TOPIC, "t"), (UNKNOWN_TYPE, "x")]) {
        assert_eq!(got, vec![(0, None), want.clone()]);
    }
}
