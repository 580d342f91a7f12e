"""Column lists of the headerless Slurm samples in shared/samples/slurm (option `columns`)."""

# the hb-jobinfo sample: `sacct --format` of its jobinfo tool
HB_COLUMNS = (
    "JobID,JobName,User,Partition,NodeList,NNodes,NCPUs,NTasks,State,Submit,Start,End,"
    "Timelimit,Elapsed,TotalCPU,CPUTime,UserCPU,SystemCPU,ReqMem,MaxRSS,MaxVMSize,ReqTRES,"
    "AllocTRES,TRESUsageInMax,TRESUsageInTot,TRESUsageOutTot,MaxDiskRead,MaxDiskWrite,"
    "MaxRSSNode,MaxRSSTask,MaxVMSizeNode,MaxVMSizeTask,MaxDiskReadNode,MaxDiskReadTask,"
    "MaxDiskWriteNode,MaxDiskWriteTask,Comment"
).split(",")
# Open XDMoD's legacy export (with ReqGRES)
LEGACY_COLUMNS = (
    "jobid,jobidraw,cluster,partition,account,group,gid,user,uid,submit,eligible,start,end,"
    "elapsed,exitcode,state,nnodes,ncpus,reqcpus,reqmem,reqgres,reqtres,alloctres,timelimit,"
    "nodelist,jobname"
).split(",")
