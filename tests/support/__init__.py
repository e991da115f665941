"""Helpers that tests in more than one folder share (a helper one folder uses sits in it).

aws_cli_model checks the ``aws ...`` commands a text quotes against botocore;
moto_cfn is what moto's CloudFormation cannot do; sidecar_clock runs the demand
sidecar on a fake clock; stubbed makes offline clients for botocore's Stubber;
zero_alarms builds the wake and sleep alarms' queries as AWS returns them.
"""
